"""The gate on a PostgreSQL connection (harness.gate.pg_proxy): the SSLRequest answered `N` by the gate,
messages forwarded, `pg.commit` reported as the commit arrives and as it is answered, held, released,
dropped.

A fake server on loopback (it answers a simple Query's BEGIN, INSERT and COMMIT with their tags and a
ReadyForQuery, and keeps what it received) stands in for PostgreSQL: this tests the gate, not the server;
the suites run the real one (suites/test_tables.py).
"""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from harness.gate.pg_protocol import MAX_MESSAGE
from harness.gate.points import GateEvent, Hold, Peer
from harness.gate.proxy import KafkaGate
from suites.unit.conftest import SECRET
from suites.unit.test_gate import refused, wait_for
from suites.unit.test_pg_protocol import SSL_REQUEST, STARTUP_MESSAGE, complete, cstr, query, typed

pytestmark = pytest.mark.unit
BACKEND = 4242  # the server process FakePostgres names in its BackendKeyData
OVERSIZED = "SELECT repeat('x', 2^30)"  # FakePostgres answers it with a message over MAX_MESSAGE


class FakePostgres:
    """Answers a startup with AuthenticationOk, BackendKeyData and ReadyForQuery, each Query with its tag and
    status."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            connection, _ = self.server.accept()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            size = struct.unpack(">i", connection.recv(4, socket.MSG_WAITALL))[0]
            self.received.append(f"startup {struct.unpack('>i', connection.recv(size - 4, socket.MSG_WAITALL)[:4])[0]}")
            connection.sendall(typed(b"R", struct.pack(">i", 0)) + typed(b"K", struct.pack(">ii", BACKEND, 7)) +
                               typed(b"Z", b"I"))
            block = False
            while head := connection.recv(5, socket.MSG_WAITALL):
                body = connection.recv(struct.unpack_from(">i", head, 1)[0] - 4, socket.MSG_WAITALL)
                if head[:1] != b"Q":
                    continue
                sql = body.rstrip(b"\0").decode()
                self.received.append(sql)
                if sql == OVERSIZED:  # an answer longer than the gate reads
                    connection.sendall(b"D" + struct.pack(">i", MAX_MESSAGE + 1))
                    continue
                tag = {"BEGIN": "BEGIN", "COMMIT": "COMMIT"}.get(sql, "INSERT 0 1")
                block = sql == "BEGIN" or (block and sql != "COMMIT")
                connection.sendall(typed(b"C", cstr(tag)) + typed(b"Z", b"T" if block else b"I"))


class HoldCommits:
    """Holds every pg.commit, as it arrives or as it is answered."""

    def __init__(self, answered: bool) -> None:
        self.answered = answered
        self.holds: list[Hold] = []

    def on_point(self, event: GateEvent) -> bool:
        return event.answered == self.answered

    def on_hold(self, hold: Hold) -> None:
        self.holds.append(hold)


@pytest.fixture
def gate(pg_relay_ports):
    server = FakePostgres()
    events: list[tuple[str, dict]] = []
    running = KafkaGate(("127.0.0.1", pg_relay_ports[2]), lambda ip: Peer("driver-q", "driver", ip),
                        lambda peer: ("127.0.0.1", server.port if peer.service == "postgres" else 1), SECRET)
    running.record = lambda type, **fields: events.append((type, fields))
    running.start()
    running.server, running.events, running.pg_port = server, events, pg_relay_ports[1]  # type: ignore[attr-defined]
    yield running
    running.stop()


def session(gate: KafkaGate) -> socket.socket:
    """A client that asks for TLS first (as libpq and pgjdbc do by default), then starts in plain text."""
    connection = socket.create_connection(("127.0.0.1", gate.pg_port), timeout=5)  # type: ignore[attr-defined]
    connection.sendall(SSL_REQUEST)
    assert connection.recv(1) == b"N"  # from the gate: the server never sees the SSLRequest
    connection.sendall(STARTUP_MESSAGE)
    assert status(connection) == "I"
    return connection


def status(connection: socket.socket) -> str:
    """Read messages up to a ReadyForQuery; its transaction status."""
    while True:
        head = connection.recv(5, socket.MSG_WAITALL)
        assert len(head) == 5, "the connection closed"
        body = connection.recv(struct.unpack_from(">i", head, 1)[0] - 4, socket.MSG_WAITALL)
        if head[:1] == b"Z":
            return body.decode()


def test_commits_are_reported_as_sent_and_as_answered(gate: KafkaGate) -> None:
    with session(gate) as connection:
        for sql, after in (("BEGIN", "T"), ("INSERT INTO t VALUES (1)", "T"), ("COMMIT", "I"),
                           ("INSERT INTO t VALUES (2)", "I")):
            connection.sendall(query(sql))
            assert status(connection) == after
    assert gate.server.received == ["startup 196608", "BEGIN", "INSERT INTO t VALUES (1)", "COMMIT",  # type: ignore[attr-defined]
                                    "INSERT INTO t VALUES (2)"]
    points = [(f["point"], f["phase"], f["how"], f.get("committed"), f["role"])
              for type, f in gate.events if type == "point"]  # type: ignore[attr-defined]
    assert points == [("pg.commit", "request", "commit", None, "driver"),
                      ("pg.commit", "response", "commit", True, "driver"),
                      ("pg.commit", "request", "autocommit", None, "driver"),
                      ("pg.commit", "response", "autocommit", True, "driver")]


def test_the_server_process_of_each_connection_is_noted_with_its_peer(gate: KafkaGate) -> None:
    """A writer held at its commit is found by its server process: the gate says whose connection it is."""
    with session(gate):
        assert gate.backends[BACKEND].role == "driver" and gate.backends[BACKEND].container == "driver-q"


def test_a_held_commit_reaches_the_server_only_when_released(gate: KafkaGate) -> None:
    interceptor = HoldCommits(answered=False)
    gate.interceptor = interceptor
    with session(gate) as connection:
        connection.sendall(query("BEGIN") + query("INSERT INTO t VALUES (1)"))
        assert status(connection) == "T" and status(connection) == "T"
        connection.sendall(query("COMMIT")[:3])  # split: the gate waits for the whole message
        connection.sendall(query("COMMIT")[3:])
        wait_for(lambda: interceptor.holds)
        assert interceptor.holds[0].what == "request"
        assert "COMMIT" not in gate.server.received  # type: ignore[attr-defined]
        interceptor.holds[0].release()
        assert status(connection) == "I"
    assert "COMMIT" in gate.server.received  # type: ignore[attr-defined]


def test_a_commit_cut_before_the_server_is_never_committed(gate: KafkaGate) -> None:
    interceptor = HoldCommits(answered=False)
    gate.interceptor = interceptor
    with session(gate) as connection:
        connection.sendall(query("INSERT INTO t VALUES (1)"))
        wait_for(lambda: interceptor.holds)
        interceptor.holds[0].drop()
        assert connection.recv(1) == b""
    assert "INSERT INTO t VALUES (1)" not in gate.server.received  # type: ignore[attr-defined]


def test_a_dropped_answer_leaves_the_commit_done_and_the_client_without_its_answer(gate: KafkaGate) -> None:
    interceptor = HoldCommits(answered=True)
    gate.interceptor = interceptor
    with session(gate) as connection:
        connection.sendall(query("BEGIN") + query("INSERT INTO t VALUES (1)") + query("COMMIT"))
        assert status(connection) == "T" and status(connection) == "T"
        wait_for(lambda: interceptor.holds)
        assert interceptor.holds[0].what == "response"
        assert "COMMIT" in gate.server.received  # type: ignore[attr-defined]
        interceptor.holds[0].drop()
        rest = b""
        while chunk := connection.recv(100):
            rest += chunk
        assert rest == complete("COMMIT")  # its tag came before the answer's ReadyForQuery, which never comes
    assert any(type == "drop" and f["phase"] == "response" for type, f in gate.events)  # type: ignore[attr-defined]


def test_postgres_commits_are_drawn_on_their_senders_lane() -> None:
    from harness.report.swimlanes import swimlanes_svg

    def commit(t: float, phase: str, connection: int, **fields: object) -> dict:
        return {"t": t, "type": "point", "point": "pg.commit", "phase": phase, "container": "driver-q",
                "connection": connection, "how": "commit", "statement": "commit", **fields}

    events = [{"t": 1.0, "type": "scenario.start"},
              commit(2.0, "request", 7), commit(2.5, "response", 7, committed=True),
              commit(3.0, "request", 7), commit(3.25, "response", 7, committed=True),
              {"t": 3.3, "type": "drop", "container": "driver-q", "connection": 7, "phase": "response"},
              commit(4.0, "request", 8), {"t": 5.0, "type": "scenario.end"}]
    svg = swimlanes_svg(events, {}, {})
    assert "PostgreSQL commit (commit): committed after 0.50 s" in svg  # the first answer, not the dropped one
    assert "committed, its answer dropped after 0.25 s" in svg and "never answered after 1.00 s" in svg


def test_postgres_commits_are_described_in_plain_words() -> None:
    from harness.report.events import describe

    sent = {"type": "point", "point": "pg.commit", "phase": "request", "container": "spark-worker-1",
            "how": "autocommit", "statement": "insert into out_t"}
    assert describe(sent) == "spark-worker-1 sent a PostgreSQL autocommit (insert into out_t)"
    refused = {**sent, "phase": "response", "committed": False, "error": "23505: duplicate key"}
    assert describe(refused) == "spark-worker-1's PostgreSQL autocommit answered: not committed (23505: duplicate key)"


@pytest.mark.parametrize("sent, direction", [(b"Q" + struct.pack(">i", MAX_MESSAGE + 1), "request"),
                                             (b"Q" + struct.pack(">i", -7), "request"),
                                             (query(OVERSIZED), "response")])
def test_a_message_length_out_of_range_closes_its_connection_counted_and_reported(gate: KafkaGate, sent: bytes,
                                                                                  direction: str) -> None:
    """Either way, a message the gate would have to hold whole beyond MAX_MESSAGE (or of a negative length)
    ends its connection, not the gate's pump with an error nobody reads."""
    with session(gate) as connection:
        connection.sendall(sent)
        assert connection.recv(5) == b""
    wait_for(lambda: refused(gate))
    assert gate.frames_refused == 1 and refused(gate)[0]["direction"] == direction
    assert "out of range" in refused(gate)[0]["why"]
