"""The gate's framing: headers and transactional bodies in every version, points, holds, release and drop.

A fake upstream (a loopback server that answers every request with its correlation id) stands in
for the broker: this tests framing, not Kafka.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest
from kafka.protocol.producer.produce import ProduceRequest
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest

from harness.faults.schedule import Schedule
from harness.faults.spec import parse_step
from harness.gate.copies import CopiedWrites
from harness.gate.points import GateEvent, Hold, Peer
from harness.gate.protocol import MAX_FRAME, parse_request
from harness.gate.proxy import KafkaGate
from harness.history import History
from suites.unit.conftest import SECRET

pytestmark = pytest.mark.unit


def frame(message, version: int, correlation_id: int) -> bytes:  # type: ignore[no-untyped-def]
    message.API_VERSION = version
    message.with_header(correlation_id=correlation_id, client_id="unit")
    return bytes(message.encode(header=True, framed=True))


def end_txn(version: int, committed: bool, correlation_id: int = 1) -> bytes:
    request = EndTxnRequest[version](transactional_id="tx-1", producer_id=7, producer_epoch=2, committed=committed)
    return frame(request, version, correlation_id)


@pytest.mark.parametrize("version", range(0, 6))
def test_end_txn_every_version(version: int) -> None:
    info = parse_request(end_txn(version, committed=True)[4:])
    assert (info.api_key, info.api_version, info.correlation_id, info.client_id) == (26, version, 1, "unit")
    assert (info.transactional_id, info.producer_id, info.producer_epoch, info.committed) == ("tx-1", 7, 2, True)


@pytest.mark.parametrize("version", range(0, 7))
def test_init_producer_id_every_version(version: int) -> None:
    request = InitProducerIdRequest[version](transactional_id="tx-2", transaction_timeout_ms=1000)
    info = parse_request(frame(request, version, 3)[4:])
    assert (info.transactional_id, info.transaction_timeout_ms) == ("tx-2", 1000)  # the sink's timeout, seen


@pytest.mark.parametrize("version", range(0, 4))
def test_add_partitions_to_txn_client_versions(version: int) -> None:
    request = AddPartitionsToTxnRequest[version](
        v3_and_below_transactional_id="tx-3", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="out", partitions=[2, 0])],
    )
    info = parse_request(frame(request, version, 4)[4:])
    assert (info.transactional_id, info.partitions) == ("tx-3", (("out", 2), ("out", 0)))  # where it writes


@pytest.mark.parametrize("version", [3, 8, 9, 11, 12])
@pytest.mark.parametrize("transactional_id", [None, "tx-4"])
def test_produce_transactional_id_and_acks(version: int, transactional_id: str | None) -> None:
    info = parse_request(produce(version, transactional_id, acks=-1, correlation_id=5)[4:])
    assert (info.transactional_id, info.acks) == (transactional_id, -1)
    assert parse_request(produce(version, transactional_id, acks=0, correlation_id=5)[4:]).acks == 0


def produce(version: int, transactional_id: str | None, acks: int, correlation_id: int) -> bytes:
    request = ProduceRequest[version](transactional_id=transactional_id, acks=acks, timeout_ms=1000, topic_data=[])
    return frame(request, version, correlation_id)


class FakeBroker:
    """Answers each request frame with a frame holding its correlation id (its size `answer_size` when given:
    a broker whose answer is not Kafka's)."""

    def __init__(self, answer_size: int | None = None) -> None:
        self.answer_size = answer_size
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[int] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            connection, _ = self.server.accept()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection, contextlib.suppress(ConnectionResetError):  # a client gone before its frame was forwarded
            while header := connection.recv(4, socket.MSG_WAITALL):
                payload = connection.recv(struct.unpack(">i", header)[0], socket.MSG_WAITALL)
                correlation_id = struct.unpack_from(">i", payload, 4)[0]
                self.received.append(correlation_id)
                connection.sendall(struct.pack(">ii", self.answer_size or 4, correlation_id))


class HoldOn:
    """Holds one point, and keeps the holds for the test."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.holds: list[Hold] = []

    def on_point(self, event: GateEvent) -> bool:
        return event.point == self.point

    def on_hold(self, hold: Hold) -> None:
        self.holds.append(hold)


@pytest.fixture
def gate(relay_ports):
    running = gate_to(relay_ports, FakeBroker())
    yield running
    running.stop()


def gate_to(relay_ports: tuple[int, int], broker: FakeBroker) -> KafkaGate:
    """A gate, started, that sends every client to `broker`, and keeps the events it records."""
    events: list[tuple[str, dict]] = []
    running = KafkaGate(("127.0.0.1", relay_ports[1]), lambda ip: Peer("unit", "executors", ip),
                        lambda peer: ("127.0.0.1", broker.port), SECRET)
    running.record = lambda type, **fields: events.append((type, fields))
    running.start()
    running.broker, running.events, running.client_port = broker, events, relay_ports[0]  # type: ignore[attr-defined]
    return running


def client(gate: KafkaGate) -> socket.socket:
    """A client of the system under test: it connects to the relay, which the gate claims it from."""
    return socket.create_connection(("127.0.0.1", gate.client_port), timeout=5)  # type: ignore[attr-defined]


def answer(connection: socket.socket) -> int:
    size = struct.unpack(">i", connection.recv(4, socket.MSG_WAITALL))[0]
    return struct.unpack(">i", connection.recv(size, socket.MSG_WAITALL))[0]


def wait_for(condition, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_forwards_and_names_commit_points(gate: KafkaGate) -> None:
    with client(gate) as connection:
        connection.sendall(end_txn(3, committed=True, correlation_id=11))
        assert answer(connection) == 11
        connection.sendall(end_txn(3, committed=False, correlation_id=12))
        assert answer(connection) == 12
    points = [fields["point"] for type, fields in gate.events if type == "point"]  # type: ignore[attr-defined]
    assert points == ["txn.pre_commit", "txn.commit", "txn.abort"]


def test_held_request_reaches_the_broker_only_when_released(gate: KafkaGate) -> None:
    interceptor = HoldOn("txn.pre_commit")
    gate.interceptor = interceptor
    with client(gate) as connection:
        connection.sendall(end_txn(4, committed=True, correlation_id=21))
        assert_held_before_the_broker(gate, interceptor, connection, 21)


@pytest.mark.parametrize("point, request_frame", [
    ("txn.commit", end_txn(5, committed=True, correlation_id=31)),
    ("produce", produce(9, None, acks=-1, correlation_id=31)),  # a non-transactional write, acknowledged
])
def test_held_response_is_answered_by_the_broker_but_not_delivered_until_released(
    gate: KafkaGate, point: str, request_frame: bytes
) -> None:
    interceptor = HoldOn(point)
    gate.interceptor = interceptor
    with client(gate) as connection:
        connection.sendall(request_frame)
        wait_for(lambda: interceptor.holds)
        assert interceptor.holds[0].what == "response"
        assert 31 in gate.broker.received  # type: ignore[attr-defined]
        connection.settimeout(0.3)
        with pytest.raises(socket.timeout):
            connection.recv(1)
        connection.settimeout(5)
        interceptor.holds[0].release()
        assert answer(connection) == 31


def test_produce_without_acks_is_held_before_the_broker(gate: KafkaGate) -> None:
    """With acks=0 the broker never answers: the only place to hold the write is on its way in."""
    interceptor = HoldOn("produce")
    gate.interceptor = interceptor
    with client(gate) as connection:
        connection.sendall(produce(9, None, acks=0, correlation_id=61))
        assert_held_before_the_broker(gate, interceptor, connection, 61)


def test_transactional_produce_is_a_first_write_not_a_produce_point(gate: KafkaGate) -> None:
    with client(gate) as connection:
        for correlation_id in (71, 72):
            connection.sendall(produce(9, "tx-5", acks=-1, correlation_id=correlation_id))
            assert answer(connection) == correlation_id
    points = [fields["point"] for type, fields in gate.events if type == "point"]  # type: ignore[attr-defined]
    assert points == ["txn.first_write"]


def assert_held_before_the_broker(gate: KafkaGate, interceptor: HoldOn, connection: socket.socket,
                                  correlation_id: int) -> None:
    wait_for(lambda: interceptor.holds)
    assert interceptor.holds[0].what == "request"
    time.sleep(0.2)
    assert correlation_id not in gate.broker.received  # type: ignore[attr-defined]
    interceptor.holds[0].release()
    assert answer(connection) == correlation_id


def test_dropped_hold_cuts_the_connection(gate: KafkaGate) -> None:
    interceptor = HoldOn("txn.pre_commit")
    gate.interceptor = interceptor
    with client(gate) as connection:
        connection.sendall(end_txn(2, committed=True, correlation_id=41))
        wait_for(lambda: interceptor.holds)
        interceptor.holds[0].drop()
        assert connection.recv(4) == b""
    assert 41 not in gate.broker.received  # type: ignore[attr-defined]
    assert any(type == "drop" for type, _ in gate.events)  # type: ignore[attr-defined]


def test_a_delayed_request_holds_its_retries_until_released(gate: KafkaGate) -> None:
    """librdkafka resends an unanswered EndTxn on a new connection: a delay must hold that copy too."""

    class Nemesis:
        def __init__(self) -> None:
            self.held: list = []

        def inject(self, step, event, held) -> None:  # type: ignore[no-untyped-def]
            self.held.append(held)

    nemesis = Nemesis()
    history = History(Path(tempfile.mkdtemp()) / "history.jsonl")
    schedule = Schedule([parse_step("delay:sender@txn.pre_commit/30s")], nemesis, history)  # type: ignore[arg-type]
    gate.interceptor = schedule
    with client(gate) as first, client(gate) as retry:
        first.sendall(end_txn(3, committed=True, correlation_id=51))
        wait_for(lambda: nemesis.held)
        retry.sendall(end_txn(3, committed=True, correlation_id=52))
        wait_for(lambda: len(nemesis.held[0].holds) == 2)
        time.sleep(0.2)
        assert not {51, 52} & set(gate.broker.received)  # type: ignore[attr-defined]
        nemesis.held[0].release()
        assert answer(first) == 51 and answer(retry) == 52
    schedule.close()
    history.close()


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_produce_names_the_partitions_it_writes_without_decoding_records(version: int) -> None:
    data = ProduceRequest.TopicProduceData
    topics = [data(name="out", partition_data=[data.PartitionProduceData(index=2, records=b"r" * 900),
                                               data.PartitionProduceData(index=0, records=None)]),
              data(name="markers", partition_data=[data.PartitionProduceData(index=0, records=b"m")])]
    request = ProduceRequest[version](transactional_id=None, acks=-1, timeout_ms=1000, topic_data=topics)
    payload = frame(request, version, 6)[4:]
    info = parse_request(payload)
    assert info.partitions == (("out", 2), ("out", 0), ("markers", 0))
    assert [(topic, payload[start:end]) for topic, start, end in info.record_sets] == [
        ("out", b"r" * 900), ("out", b""), ("markers", b"m")]


def test_a_write_that_copies_a_held_one_s_records_from_another_container_is_a_copy(relay_ports) -> None:
    """One executor's write to the output held at the gate, another's carrying the same records while it is:
    the gate records a copy (the speculation rows' evidence), with neither request's records changed."""
    from suites.unit.test_record_batches import RECORDS, batch

    names = iter(["spark-worker-1", "spark-worker-2"])
    broker = FakeBroker()
    gate = KafkaGate(("127.0.0.1", relay_ports[1]), lambda ip: Peer(next(names), "executors", ip),
                     lambda peer: ("127.0.0.1", broker.port), SECRET)
    events: list[tuple[str, dict]] = []
    gate.record = lambda type, **fields: events.append((type, fields))
    gate.interceptor, gate.outputs, gate.copies = (holding := HoldOn("produce.sent")), {"out"}, CopiedWrites()
    gate.start()
    data = ProduceRequest.TopicProduceData

    def write(correlation_id: int, records: bytes) -> bytes:
        topics = [data(name="out", partition_data=[data.PartitionProduceData(index=0, records=records)])]
        return frame(ProduceRequest[8](transactional_id=None, acks=-1, timeout_ms=1000, topic_data=topics), 8,
                     correlation_id)

    try:
        with socket.create_connection(("127.0.0.1", relay_ports[0]), timeout=5) as first:
            first.sendall(write(1, batch(RECORDS)))
            wait_for(lambda: holding.holds)
            with socket.create_connection(("127.0.0.1", relay_ports[0]), timeout=5) as copy:
                copy.sendall(write(2, batch(RECORDS, 1, stamp=5)))
                wait_for(lambda: len(holding.holds) == 2)
                holding.holds[1].release()
                assert answer(copy) == 2
            holding.holds[0].release()
            assert answer(first) == 1
    finally:
        gate.stop()
    copied = [fields for type, fields in events if type == "write.copied"]
    assert copied == [{"attempt": "spark-worker-1", "copy": "spark-worker-2", "records": 3}], events


def test_a_plain_write_to_the_output_is_produce_sent_as_it_arrives_and_produce_as_answered() -> None:
    gate = KafkaGate(("127.0.0.1", 1), lambda address: Peer("w", "executors", address), lambda peer: ("127.0.0.1", 1),
                     SECRET)
    gate.outputs = {"out"}
    data = ProduceRequest.TopicProduceData

    def points(topic: str, acks: int) -> tuple[str | None, str | None]:
        topics = [data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=b"r")])]
        request = ProduceRequest[8](transactional_id=None, acks=acks, timeout_ms=1000, topic_data=topics)
        return gate._points(parse_request(frame(request, 8, 7)[4:]))

    assert points("out", -1) == ("produce.sent", "produce")
    assert points("markers", -1) == (None, "produce")  # a write the harness does not read: no hold before the broker
    assert points("out", 0) == ("produce", None)  # no response to hold


def test_the_gate_says_so_when_its_control_connection_closes(relay_ports) -> None:
    """A gate whose relay went away can route no client: every later scenario would stall into
    `incomplete`; the scenario's wait raises the harness's own failure instead (exit 3)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    events: list[str] = []
    gate = KafkaGate(("127.0.0.1", port), lambda ip: Peer("unit", "executors", ip), lambda peer: ("127.0.0.1", 1),
                     SECRET)
    gate.record = lambda type, **fields: events.append(type)

    def relay_then_gone() -> None:
        connection, _ = listener.accept()
        assert connection.makefile("rb").readline() == f"{SECRET} control\n".encode()
        connection.sendall(b"ready\n")
        time.sleep(0.2)
        connection.close()

    thread = threading.Thread(target=relay_then_gone)
    thread.start()
    gate.start()
    thread.join()
    deadline = time.monotonic() + 5
    while gate.failure is None and time.monotonic() < deadline:
        time.sleep(0.05)
    gate.stop()
    listener.close()
    assert gate.failure is not None and "control connection" in gate.failure and "gate.lost" in events


def refused(gate: KafkaGate) -> list[dict]:
    return [fields for type, fields in gate.events if type == "gate.frame_refused"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [-1, -2**31, 0, 3, MAX_FRAME + 1, 2**31 - 1])
def test_a_request_frame_size_out_of_range_closes_its_connection_counted_and_reported(gate: KafkaGate,
                                                                                     size: int) -> None:
    """The system under test says how many bytes the gate must hold: a negative size, one too small for a
    header, or one over MAX_FRAME closes that connection before anything is read or forwarded, and the
    gate routes the next one as before."""
    with client(gate) as connection:
        connection.sendall(struct.pack(">i", size) + b"x" * 64)
        assert connection.recv(4) == b""
    wait_for(lambda: refused(gate))
    assert gate.frames_refused == 1 and not gate.broker.received  # type: ignore[attr-defined]
    assert refused(gate)[0]["direction"] == "request" and f"{size:,} bytes" in refused(gate)[0]["why"]
    with client(gate) as connection:
        connection.sendall(end_txn(3, committed=True, correlation_id=81))
        assert answer(connection) == 81


def test_a_response_frame_size_out_of_range_closes_its_connection_counted_and_reported(relay_ports) -> None:
    gate = gate_to(relay_ports, FakeBroker(answer_size=-5))
    try:
        with client(gate) as connection:
            connection.sendall(end_txn(3, committed=True, correlation_id=82))
            assert connection.recv(4) == b""
        wait_for(lambda: refused(gate))
        assert gate.frames_refused == 1 and refused(gate)[0]["direction"] == "response"
    finally:
        gate.stop()


def test_frames_wait_for_room_in_the_gates_pool_and_give_it_back(gate: KafkaGate,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A sink opening connections that each announce a large frame and trickle its bytes filled the harness's
    memory, 100 MiB a connection: a frame is read only once its size fits the gate's pool, as a broker's
    queued.max.request.bytes bounds its own."""
    gate._pool.capacity = gate._pool.free = 4096  # type: ignore[attr-defined]
    with client(gate) as hog, client(gate) as waiting:
        hog.sendall(struct.pack(">i", 4090) + b"x" * 10)  # announced, never finished: holds 4090 bytes
        wait_for(lambda: gate._pool.free == 6)  # type: ignore[attr-defined]
        waiting.sendall(end_txn(3, committed=True, correlation_id=82))
        time.sleep(0.3)
        assert 82 not in gate.broker.received, "a frame was read past the pool"  # type: ignore[attr-defined]
    wait_for(lambda: 82 in gate.broker.received or gate._pool.free == 4096)  # type: ignore[attr-defined]
    wait_for(lambda: gate._pool.free == 4096)  # type: ignore[attr-defined]  # every byte given back
    with client(gate) as connection:
        connection.sendall(end_txn(3, committed=True, correlation_id=83))
        assert answer(connection) == 83


def test_a_container_past_its_connection_limit_is_refused_and_said_so(gate: KafkaGate,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.gate.proxy.CONNECTIONS_PER_PEER", 2)
    opened = [client(gate) for _ in range(2)]
    for n, connection in enumerate(opened):
        connection.sendall(end_txn(3, committed=True, correlation_id=90 + n))
        assert answer(connection) == 90 + n
    with client(gate) as third:
        assert third.recv(4) == b""
    assert any(type == "gate.refused" and "2 connections open" in fields["error"]
               for type, fields in gate.events)  # type: ignore[attr-defined]
    for connection in opened:
        connection.close()
    wait_for(lambda: not gate._open_from["unit"])  # type: ignore[attr-defined]
    with client(gate) as again:
        again.sendall(end_txn(3, committed=True, correlation_id=94))
        assert answer(again) == 94
