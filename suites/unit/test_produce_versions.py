"""The Produce versions the gate reads: it matches a write to the output topic by the topic's name, which
Produce v13 replaces by an id (KIP-516). The gate caps Produce's newest version at 12 in every ApiVersions
answer it forwards, so that no client sends v13; one that does anyway is reported (`gate.unread`), never
silently mis-read."""

from __future__ import annotations

import socket
import struct

import pytest

from harness.gate.protocol import API_VERSIONS, PRODUCE, PRODUCE_READ_UP_TO, capped_api_versions
from suites.unit.test_gate import FakeBroker, client, gate_to, wait_for

pytestmark = pytest.mark.unit
KEYS = ((PRODUCE, 3, 13), (API_VERSIONS, 0, 4), (26, 0, 5))  # (api key, oldest, newest), as a broker answers


def uvarint(value: int) -> bytes:
    out = b""
    while value >= 0x80:
        out, value = out + bytes([value & 0x7F | 0x80]), value >> 7
    return out + bytes([value])


def api_versions_response(version: int, correlation_id: int, keys=KEYS) -> bytes:  # type: ignore[no-untyped-def]
    """An ApiVersions response body with its v0 header: flexible (compact array, tagged fields) from v3."""
    body = struct.pack(">ih", correlation_id, 0)
    if version >= 3:
        body += uvarint(len(keys) + 1) + b"".join(struct.pack(">hhh", *k) + uvarint(0) for k in keys)
        return body + struct.pack(">i", 0) + uvarint(0)
    body += struct.pack(">i", len(keys)) + b"".join(struct.pack(">hhh", *k) for k in keys)
    return body + (struct.pack(">i", 0) if version >= 1 else b"")


def newest(payload: bytes, version: int) -> dict[int, int]:
    """Each api key's newest version in a response made by api_versions_response."""
    pos, step = (7, 7) if version >= 3 else (10, 6)
    entries = (struct.unpack_from(">hhh", payload, pos + i * step) for i in range(len(KEYS)))
    return {key: top for key, _, top in entries}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_produce_s_newest_version_is_capped_in_place_and_the_others_kept(version: int) -> None:
    payload = api_versions_response(version, 9)
    capped = capped_api_versions(payload, version)
    assert len(capped) == len(payload)
    assert newest(capped, version) == {PRODUCE: PRODUCE_READ_UP_TO, API_VERSIONS: 4, 26: 5}
    assert capped_api_versions(api_versions_response(version, 9, ((PRODUCE, 3, 9),)), version) == \
        api_versions_response(version, 9, ((PRODUCE, 3, 9),))  # an older broker's answer stands


class ApiVersionsBroker(FakeBroker):
    """Answers an ApiVersions request as a broker whose Produce goes up to v13."""

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            while header := connection.recv(4, socket.MSG_WAITALL):
                payload = connection.recv(struct.unpack(">i", header)[0], socket.MSG_WAITALL)
                api_key, version, correlation_id = struct.unpack_from(">hhi", payload, 0)
                self.received.append(correlation_id)
                answer = api_versions_response(version, correlation_id) if api_key == API_VERSIONS \
                    else struct.pack(">i", correlation_id)
                connection.sendall(struct.pack(">i", len(answer)) + answer)


def request(api_key: int, version: int, correlation_id: int, body: bytes = b"") -> bytes:
    """A request frame with a v1 header (client id `unit`); enough for the gate, which reads the header."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"unit" + body
    return struct.pack(">i", len(payload)) + payload


def test_the_gate_answers_a_client_with_produce_capped_and_reports_a_v13_produce(relay_ports) -> None:  # type: ignore[no-untyped-def]
    gate = gate_to(relay_ports, ApiVersionsBroker())
    try:
        with client(gate) as connection:
            connection.sendall(request(API_VERSIONS, 3, 41, uvarint(0) * 3))
            size = struct.unpack(">i", connection.recv(4, socket.MSG_WAITALL))[0]
            answer = connection.recv(size, socket.MSG_WAITALL)
            assert newest(answer, 3)[PRODUCE] == PRODUCE_READ_UP_TO
            topic_id = bytes([1]) * 16  # v13: no topic name, an id
            body = uvarint(1) + struct.pack(">hi", -1, 1000) + uvarint(2) + topic_id + uvarint(1) + uvarint(0)
            connection.sendall(request(PRODUCE, 13, 42, body))
            wait_for(lambda: 42 in gate.broker.received)  # type: ignore[attr-defined]
        events = gate.events  # type: ignore[attr-defined]
        unread = [fields for kind, fields in events if kind == "gate.unread"]
        assert unread and unread[0]["api_version"] == 13, events
    finally:
        gate.stop()
