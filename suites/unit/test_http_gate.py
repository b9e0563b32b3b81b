"""The gate on HTTP connections (harness.gate.http_proxy): real clients' recorded requests
(suites/unit/fixtures/http) sent through it to a fake server that answers with the recorded responses;
`s3.put` and `catalog.commit` reported as they arrive and as they are answered, held, released, dropped.
This tests the gate, not the servers; the suites run the real ones (suites/test_object_store.py)."""

from __future__ import annotations

import re
import socket
import threading

import pytest

from harness.gate.points import GateEvent, Hold, Peer
from harness.gate.proxy import KafkaGate
from suites.unit.conftest import SECRET
from suites.unit.test_gate import wait_for
from suites.unit.test_http_protocol import TABLES
from suites.unit.test_http_protocol import recording as recorded

pytestmark = pytest.mark.unit


class FakeServer:
    """Answers each request with a recorded response: its `100 Continue` (if any) once the head is in, the
    rest once the body is; keeps every request's bytes."""

    def __init__(self, response: bytes) -> None:
        interim, _, final = response.partition(b"\r\n\r\n") if response.startswith(b"HTTP/1.1 100") else (b"", b"", b"")
        self.interim = interim + b"\r\n\r\n" if interim else b""
        self.final = final if interim else response
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            connection, _ = self.server.accept()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            head = data.split(b"\r\n\r\n")[0]
            if self.interim:
                connection.sendall(self.interim)
            length = int(re.search(rb"(?i)content-length: *([0-9]+)", head)[1])  # type: ignore[index]
            while len(data) < len(head) + 4 + length:
                data += connection.recv(65536)
            self.received.append(data)
            connection.sendall(self.final)


class HoldPoints:
    """Holds every HTTP point, as it arrives or as it is answered."""

    def __init__(self, answered: bool) -> None:
        self.answered = answered
        self.holds: list[Hold] = []

    def on_point(self, event: GateEvent) -> bool:
        return event.answered == self.answered

    def on_hold(self, hold: Hold) -> None:
        self.holds.append(hold)


def running_gate(ports: tuple[int, ...], server: FakeServer) -> KafkaGate:
    events: list[tuple[str, dict]] = []
    gate = KafkaGate(("127.0.0.1", ports[3]), lambda ip: Peer("driver-q", "driver", ip),
                     lambda peer: ("127.0.0.1", server.port if peer.service in ("s3", "catalog") else 1), SECRET)
    gate.record = lambda type, **fields: events.append((type, fields))
    gate.commit_keys = TABLES  # as a run into either store sets them
    gate.start()
    gate.events = events  # type: ignore[attr-defined]
    return gate


def exchange(port: int, request: bytes) -> bytes:
    """Send a request as its client does (the head, then the body once `100 Continue` came); all it got back."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        head, _, body = request.partition(b"\r\n\r\n")
        connection.sendall(head + b"\r\n\r\n")
        got = b""
        if b"100-continue" in head.lower():
            while b"\r\n\r\n" not in got:
                chunk = connection.recv(65536)
                if not chunk:
                    return got
                got += chunk
        connection.sendall(body)
        while chunk := connection.recv(65536):
            got += chunk
        return got


@pytest.mark.parametrize("name, port, point, detail", [
    ("delta-commit-put", 1, "s3.put", "_delta_log/00000000000000000003.json"),
    ("catalog-commit", 2, "catalog.commit", "569762670209887514"),  # the snapshot it adds
])
def test_a_commit_is_reported_as_it_arrives_and_as_it_is_answered(http_relay_ports, name: str, port: int,  # type: ignore[no-untyped-def]
                                                                   point: str, detail: str) -> None:
    request, response = recorded(name)
    server = FakeServer(response)
    gate = running_gate(http_relay_ports, server)
    try:
        got = exchange(http_relay_ports[port], request)
    finally:
        gate.stop()
    assert server.received == [request]  # byte for byte, aws-chunked body and all
    assert got == response
    points = [f for type, f in gate.events if type == "point"]  # type: ignore[attr-defined]
    assert [(f["point"], f["phase"]) for f in points] == [(point, "request"), (point, "response")]
    assert points[1]["status"] == 200 and detail in str(points[0])


def test_a_held_put_reaches_the_server_only_when_released(http_relay_ports) -> None:  # type: ignore[no-untyped-def]
    request, response = recorded("delta-commit-put")
    server = FakeServer(response)
    gate = running_gate(http_relay_ports, server)
    gate.interceptor = interceptor = HoldPoints(answered=False)
    try:
        answer: list[bytes] = []
        client = threading.Thread(target=lambda: answer.append(exchange(http_relay_ports[1], request)))
        client.start()
        wait_for(lambda: interceptor.holds)
        assert interceptor.holds[0].what == "request" and server.received == []
        interceptor.holds[0].release()
        client.join(10)
    finally:
        gate.stop()
    assert server.received == [request] and answer == [response]


def test_a_dropped_answer_leaves_the_put_done_and_the_client_without_its_answer(http_relay_ports) -> None:  # type: ignore[no-untyped-def]
    request, response = recorded("delta-commit-put")
    server = FakeServer(response)
    gate = running_gate(http_relay_ports, server)
    gate.interceptor = interceptor = HoldPoints(answered=True)
    try:
        answer: list[bytes] = []
        client = threading.Thread(target=lambda: answer.append(exchange(http_relay_ports[1], request)))
        client.start()
        wait_for(lambda: interceptor.holds)
        assert interceptor.holds[0].what == "response" and server.received == [request]
        interceptor.holds[0].drop()
        client.join(10)
    finally:
        gate.stop()
    assert answer == [server.interim]  # its 100 Continue came; its 200 never does


def test_an_object_written_again_is_recorded_as_overwritten(http_relay_ports) -> None:  # type: ignore[no-untyped-def]
    request, response = recorded("delta-commit-put")
    server = FakeServer(response)
    gate = running_gate(http_relay_ports, server)
    try:
        for _ in range(2):
            assert exchange(http_relay_ports[1], request) == response
    finally:
        gate.stop()
    [overwrite] = [f for type, f in gate.events if type == "s3.overwrite"]  # type: ignore[attr-defined]
    assert overwrite["key"].endswith("_delta_log/00000000000000000003.json")
    assert overwrite["by"] == overwrite["first_by"] == "driver-q (driver)"


def test_an_object_whose_write_failed_is_not_written() -> None:
    from harness.gate.object_writes import ObjectWrites

    writes, peer = ObjectWrites(), Peer("w", "executors", "10.0.0.2", service="s3")
    assert writes.answered("b", "k", 503, peer) is None  # refused: nothing written
    assert writes.answered("b", "k", 200, peer) is None  # its first write
    assert writes.answered("b", "k", 200, peer) is not None


class FailPoints(HoldPoints):
    def __init__(self, answered: bool, retry_after: int | None = None) -> None:
        super().__init__(answered)
        self.retry_after = retry_after

    def on_hold(self, hold: Hold) -> None:
        super().on_hold(hold)
        hold.fail(503, self.retry_after)


def test_a_failed_commit_is_applied_and_answered_with_the_step_s_status(http_relay_ports) -> None:  # type: ignore[no-untyped-def]
    request, response = recorded("catalog-commit")
    server = FakeServer(response)
    gate = running_gate(http_relay_ports, server)
    gate.interceptor = FailPoints(answered=True)
    try:
        got = exchange(http_relay_ports[2], request)
    finally:
        gate.stop()
    assert server.received == [request]  # applied
    assert got.startswith(b"HTTP/1.1 503 ") and b'"code": 503' in got and b"Connection: close" in got
    assert any(type == "fail" and f["answered"] == 503 for type, f in gate.events)  # type: ignore[attr-defined]
    assert b"Retry-After" not in got


def test_a_failed_commit_may_say_when_to_try_again(http_relay_ports) -> None:  # type: ignore[no-untyped-def]
    request, response = recorded("catalog-commit")
    gate = running_gate(http_relay_ports, FakeServer(response))
    gate.interceptor = FailPoints(answered=True, retry_after=1)
    try:
        got = exchange(http_relay_ports[2], request)
    finally:
        gate.stop()
    assert got.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1\r\n" in got
    assert any(type == "fail" and f["retry_after"] == 1 for type, f in gate.events)  # type: ignore[attr-defined]


def test_a_table_on_s3_s_space_draws_its_http_commits_from_the_baseline() -> None:
    from harness.faults.space import Observation
    from harness.faults.spec import parse_step
    from harness.output.object_store.faults import fault_classes

    seen = Observation.from_events([{"type": "point", "point": "catalog.commit", "phase": "request", "role": "driver"},
                                    {"type": "point", "point": "catalog.commit", "phase": "response",
                                     "role": "driver", "status": 200}], stateful=False, output="iceberg")
    classes = fault_classes(seen)
    assert {c.row for c in classes} >= {"kill-sender-catalog.commit", "lost-catalog.commit-response",
                                         "failed-catalog.commit-503", "partition-driver-catalog.commit"}
    assert all(str(parse_step(spec)) == spec for c in classes for spec in c.faults)
    assert fault_classes(Observation.from_events([], stateful=False)) == []
