"""PostgreSQL's wire protocol as the gate reads it (harness.gate.pg_protocol): messages cut out of split
and joined TCP reads, the startup phase, and which message sends a commit and which answers it.

The bytes are built here from the protocol's "Message Formats" (PostgreSQL 17 docs, section 53.7):
a startup message is Int32 length + Int32 code + body; every other message Byte1 type + Int32 length
(counting itself) + body; strings are NUL-terminated.
"""

from __future__ import annotations

import struct

import pytest

from harness.gate.pg_protocol import (
    CANCEL,
    GSSENC,
    SSL,
    STARTUP,
    Framer,
    PgConnection,
    ProtocolError,
    backend_pid,
    effect,
    statements,
)

pytestmark = pytest.mark.unit


def typed(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack(">i", 4 + len(body)) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def untyped(code: int, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 8 + len(body), code) + body


SSL_REQUEST = untyped(80877103)
GSSENC_REQUEST = untyped(80877104)
STARTUP_MESSAGE = untyped(196608, cstr("user") + cstr("sink") + cstr("database") + cstr("eo") + b"\0")
CANCEL_REQUEST = untyped(80877102, struct.pack(">ii", 4242, 99))


def query(sql: str) -> bytes:
    return typed(b"Q", cstr(sql))


def parse(sql: str, name: str = "") -> bytes:
    return typed(b"P", cstr(name) + cstr(sql) + struct.pack(">h", 0))


def bind(statement: str = "", portal: str = "") -> bytes:
    return typed(b"B", cstr(portal) + cstr(statement) + struct.pack(">hhh", 0, 0, 0))


def execute(portal: str = "") -> bytes:
    return typed(b"E", cstr(portal) + struct.pack(">i", 0))


SYNC = typed(b"S")
TERMINATE = typed(b"X")


def extended(sql: str, name: str = "") -> bytes:
    return parse(sql, name) + bind(name) + execute()


def complete(tag: str) -> bytes:
    return typed(b"C", cstr(tag))


def ready(status: str) -> bytes:
    return typed(b"Z", status.encode())


def error(code: str, message: str) -> bytes:
    return typed(b"E", b"S" + cstr("ERROR") + b"C" + cstr(code) + b"M" + cstr(message) + b"\0")


AUTH_OK = typed(b"R", struct.pack(">i", 0))
STARTED = AUTH_OK + typed(b"S", cstr("server_version") + cstr("15.8")) + typed(b"K", struct.pack(">ii", 1, 2)) + \
    ready("I")


def test_startup_phase_ssl_then_startup_then_typed() -> None:
    framer = Framer(frontend=True)
    kinds = [m.kind for m in framer.feed(SSL_REQUEST)]
    kinds += [m.kind for m in framer.feed(STARTUP_MESSAGE + query("select 1"))]
    assert kinds == [SSL, STARTUP, "Q"]


def test_gssenc_request_answered_n_then_startup() -> None:
    framer = Framer(frontend=True)
    assert [m.kind for m in framer.feed(GSSENC_REQUEST + SSL_REQUEST + STARTUP_MESSAGE)] == [GSSENC, SSL, STARTUP]


def test_cancel_request_is_its_own_connection() -> None:
    [message] = Framer(frontend=True).feed(CANCEL_REQUEST)
    assert (message.kind, message.raw) == (CANCEL, CANCEL_REQUEST)


def test_messages_split_at_every_byte_and_coalesced_come_out_whole() -> None:
    stream = STARTUP_MESSAGE + query("BEGIN") + extended("INSERT INTO t VALUES ($1)") + SYNC + query("COMMIT")
    whole = [m.raw for m in Framer(frontend=True).feed(stream)]
    framer = Framer(frontend=True)
    split = [m.raw for byte in range(len(stream)) for m in framer.feed(stream[byte:byte + 1])]
    assert split == whole and b"".join(whole) == stream and len(whole) == 7
    assert not framer.buffer


def test_a_length_out_of_range_is_not_postgres() -> None:
    with pytest.raises(ProtocolError):
        Framer(frontend=False).feed(b"Z" + struct.pack(">i", 2) + b"I")


@pytest.mark.parametrize("sql, effects", [
    ("COMMIT", ["commit"]),
    ("  end  transaction ", ["commit"]),
    ("commit and chain", ["commit"]),
    ("BEGIN; insert into t values (1, 'a;b'); Commit;", ["begin", "write", "commit"]),
    ("start transaction isolation level serializable", ["begin"]),
    ("rollback", ["rollback"]),
    ("ROLLBACK TO SAVEPOINT s", [None]),
    ("abort", ["rollback"]),
    ("update t set v = $$;commit;$$ -- ; commit\n where k = 1", ["write"]),
    ("/* commit; /* nested */ commit; */ delete from t", ["write"]),
    ("merge into t using s on t.k = s.k when matched then update set v = s.v", ["write"]),
    ("WITH moved AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM moved", ["write"]),
    ("copy t (k, v) from stdin with (format csv)", ["write"]),
    ("copy (select * from t) to stdout", [None]),
    ("select E'it\\'s; commit'", [None]),
    ("select 'it''s; commit'", [None]),
    ('select "commit;" from t', [None]),
    ("", []),
])
def test_statement_effects(sql: str, effects: list[str | None]) -> None:
    assert [effect(words) for words in statements(sql)] == effects


def follow(front: bytes, back: bytes) -> tuple[list[object], list[object]]:
    """The commits the frontend's messages send and the answers the backend's give, in order."""
    connection = PgConnection()
    sent = [connection.sent(m) for m in Framer(frontend=True).feed(STARTUP_MESSAGE + front)]
    answers = [connection.received(m) for m in Framer(frontend=False).feed(STARTED + back)]
    return [c for c in sent if c], [a for a in answers if a]


def test_explicit_commit_simple_query() -> None:
    commits, answers = follow(query("BEGIN") + query("INSERT INTO t VALUES (1)") + query("commit"),
                              complete("BEGIN") + ready("T") + complete("INSERT 0 1") + ready("T") +
                              complete("COMMIT") + ready("I"))
    assert [(c.how, c.statement, c.via) for c in commits] == [("commit", "commit", "Q")]
    [answer] = answers
    assert (answer.committed, answer.tags, answer.status) == (True, ("COMMIT",), "I")


def test_commit_inside_a_multi_statement_query() -> None:
    commits, answers = follow(query("BEGIN; INSERT INTO t VALUES (1); END"),
                              complete("BEGIN") + complete("INSERT 0 1") + complete("COMMIT") + ready("I"))
    assert [c.how for c in commits] == ["commit"] and answers[0].committed


def test_autocommit_write_is_a_commit_a_write_in_a_block_is_not() -> None:
    commits, answers = follow(query("INSERT INTO t VALUES (1)") + query("BEGIN") + query("UPDATE t SET v = 2"),
                              complete("INSERT 0 1") + ready("I") + complete("BEGIN") + ready("T") +
                              complete("UPDATE 1") + ready("T"))
    assert [(c.how, c.statement) for c in commits] == [("autocommit", "insert into t")]
    assert [(a.committed, a.tags) for a in answers] == [(True, ("INSERT 0 1",))]


def test_extended_protocol_commit_by_execute() -> None:
    """pgjdbc's way: BEGIN, the write and COMMIT each Parse/Bind/Execute, a Sync after each."""
    front = extended("BEGIN") + SYNC + extended("INSERT INTO t VALUES ($1)", "S_1") + SYNC + extended("COMMIT") + SYNC
    back = (typed(b"1") + typed(b"2") + complete("BEGIN") + ready("T") + typed(b"1") + typed(b"2") +
            complete("INSERT 0 1") + ready("T") + typed(b"1") + typed(b"2") + complete("COMMIT") + ready("I"))
    commits, answers = follow(front, back)
    assert [(c.how, c.via) for c in commits] == [("commit", "E")]
    assert [(a.committed, a.tags) for a in answers] == [(True, ("COMMIT",))]


def test_a_statement_prepared_once_and_executed_twice_by_name() -> None:
    connection = PgConnection()
    messages = Framer(frontend=False).feed(STARTED)
    for m in messages:
        connection.received(m)
    front = Framer(frontend=True)
    front.feed(STARTUP_MESSAGE)
    sent = [connection.sent(m) for m in front.feed(parse("INSERT INTO t VALUES ($1)", "S_2") + bind("S_2") +
                                                     execute() + SYNC + bind("S_2") + execute() + SYNC)]
    assert [c.how for c in sent if c] == ["autocommit", "autocommit"]


def test_pipelined_cycles_are_answered_in_order() -> None:
    """psycopg's pipeline mode: several Syncs sent before any ReadyForQuery comes back."""
    front = extended("INSERT INTO t VALUES (1)") + SYNC + extended("SELECT 1") + SYNC + \
        extended("INSERT INTO t VALUES (2)") + SYNC
    back = complete("INSERT 0 1") + ready("I") + complete("SELECT 1") + ready("I") + \
        error("23505", "duplicate key value violates unique constraint") + ready("I")
    commits, answers = follow(front, back)
    assert len(commits) == 2
    assert [(a.committed, a.error) for a in answers] == [
        (True, None), (False, "23505: duplicate key value violates unique constraint")]


def test_commit_of_a_failed_block_is_a_rollback() -> None:
    commits, answers = follow(query("BEGIN") + query("INSERT INTO t VALUES (1)") + query("COMMIT"),
                              complete("BEGIN") + ready("T") + error("23505", "duplicate") + ready("E") +
                              complete("ROLLBACK") + ready("I"))
    assert len(commits) == 1 and (answers[0].committed, answers[0].tags) == (False, ("ROLLBACK",))


def test_the_servers_status_corrects_the_gates_reading() -> None:
    """A BEGIN the server refused (the gate read it as a block): the next write is autocommit after all."""
    connection = PgConnection()
    for m in Framer(frontend=False).feed(STARTED):
        connection.received(m)
    front = Framer(frontend=True)
    front.feed(STARTUP_MESSAGE)
    [begin] = front.feed(query("BEGIN; SELECT 1/0"))
    assert connection.sent(begin) is None and connection.in_block
    for m in Framer(frontend=False).feed(complete("BEGIN") + error("22012", "division by zero") + ready("E")):
        connection.received(m)
    [rollback] = front.feed(query("ROLLBACK"))
    connection.sent(rollback)
    for m in Framer(frontend=False).feed(complete("ROLLBACK") + ready("I")):
        connection.received(m)
    [write] = front.feed(query("DELETE FROM t"))
    commit = connection.sent(write)
    assert commit is not None and commit.how == "autocommit"


def test_a_session_that_starts_in_a_block_is_followed_from_the_startups_ready() -> None:
    connection = PgConnection()
    for m in Framer(frontend=False).feed(AUTH_OK + ready("T")):
        connection.received(m)
    [write] = Framer(frontend=False).feed(query("INSERT INTO t VALUES (1)"))
    assert connection.sent(write) is None


def test_the_startup_s_backend_key_data_names_the_server_process() -> None:
    """The gate notes which server process serves each peer's connection (a held writer's pid to its role)."""
    messages = Framer(frontend=False).feed(STARTED + complete("COMMIT"))
    assert [backend_pid(m) for m in messages] == [None, None, 1, None, None]
