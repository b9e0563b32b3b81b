"""PostgreSQL's wire protocol (v3), as much as the gate needs to find a commit: the messages of either
direction cut out of a byte stream, and per connection which frontend message sends a commit and which
ReadyForQuery answers it.

A commit is sent by an explicit `COMMIT`/`END` (a simple Query, or the Execute of a prepared one), or by a
write (INSERT, UPDATE, DELETE, MERGE, COPY ... FROM) sent outside a transaction block: autocommit, the
implicit transaction a Query or a Sync ends. The server answers every Query and every Sync (and a
FunctionCall) with one ReadyForQuery, in order, so the commit's response is the ReadyForQuery that ends
its cycle; what came before it in that cycle (CommandComplete tags, an ErrorResponse) says whether it
committed. The startup phase's messages have no type byte: an SSLRequest or GSSENCRequest (answered `N`
by whoever reads it: then a StartupMessage follows), a StartupMessage, a CancelRequest.
"""

from __future__ import annotations

import re
import struct
from collections import deque
from dataclasses import dataclass, field

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
NOT_SUPPORTED = b"N"  # the answer to an SSLRequest or GSSENCRequest: go on in plain text
# The longest message the gate reads, either way. It holds a whole message before forwarding it: the server
# takes up to 1 GiB, which any connection of the sink could make the harness allocate. A sink of this harness
# writes its records, small rows; the same ceiling as a Kafka frame's (harness.gate.protocol.MAX_FRAME).
MAX_MESSAGE = 100 * 2**20

# the startup phase's kinds (typed messages are named by their type byte, e.g. "Q", "Z")
SSL = "ssl"
GSSENC = "gssenc"
STARTUP = "startup"
CANCEL = "cancel"
BACKEND_KEY = "K"  # BackendKeyData, in the startup's answer: the server process that serves the connection
WRITES = ("insert", "update", "delete", "merge")


class ProtocolError(ValueError):
    """Bytes that are not PostgreSQL's protocol (a length out of range)."""


@dataclass(frozen=True)
class Message:
    """One message as on the wire (`raw`), its kind and its body (after type and length)."""

    kind: str
    raw: bytes

    @property
    def body(self) -> bytes:
        return self.raw[4:] if self.kind in (SSL, GSSENC, STARTUP, CANCEL) else self.raw[5:]


class Framer:
    """Cuts one direction's byte stream into messages, however TCP split or joined them.

    The frontend's first message has no type byte; after an SSLRequest or GSSENCRequest (answered `N`)
    the next one has none either. The backend's messages are all typed (an `N` answer is not relayed
    through a Framer)."""

    def __init__(self, frontend: bool) -> None:
        self.untyped = frontend  # the next message is a startup-phase one
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[Message]:
        """The whole messages `data` completes; a partial one waits for the next feed."""
        self.buffer += data
        messages = []
        pos = 0
        while True:
            head = 4 if self.untyped else 5
            if len(self.buffer) - pos < head:
                break
            (length,) = struct.unpack_from(">i", self.buffer, pos + head - 4)
            if not 4 <= length <= MAX_MESSAGE:
                raise ProtocolError(f"message length {length:,} out of range (4 to {MAX_MESSAGE:,})")
            end = pos + head - 4 + length
            if len(self.buffer) < end:
                break
            raw = bytes(self.buffer[pos:end])
            messages.append(self._message(raw))
            pos = end
        del self.buffer[:pos]
        return messages

    def _message(self, raw: bytes) -> Message:
        if not self.untyped:
            return Message(chr(raw[0]), raw)
        code = struct.unpack_from(">i", raw, 4)[0] if len(raw) >= 8 else 0
        kind = {SSL_REQUEST: SSL, GSSENC_REQUEST: GSSENC, CANCEL_REQUEST: CANCEL}.get(code, STARTUP)
        self.untyped = kind in (SSL, GSSENC)  # answered N: the StartupMessage comes next, untyped too
        return Message(kind, raw)


def backend_pid(message: Message) -> int | None:
    """The server's process id a BackendKeyData names (pg_stat_activity's `pid` of the connection), None
    for any other message."""
    if message.kind != BACKEND_KEY or len(message.body) < 4:
        return None
    return struct.unpack_from(">i", message.body)[0]


def _cstring(body: bytes, pos: int) -> tuple[str, int]:
    end = body.index(0, pos)
    return body[pos:end].decode(errors="replace"), end + 1


_TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<line>--[^\n]*)|(?P<block>/\*)|(?P<dollar>\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)"""
    r"""|(?P<escaped>[Ee]'(?:[^'\\]|''|\\.)*'?)|(?P<string>(?:[BbXxNn]|[Uu]&)?'(?:[^']|'')*'?)"""
    r"""|(?P<ident>"(?:[^"]|"")*"?)|(?P<semi>;)"""
    r"""|(?P<word>[A-Za-z_][A-Za-z_0-9$]*)|(?P<other>.)""",
    re.DOTALL,
)


def statements(sql: str) -> list[tuple[str, ...]]:
    """The statements of a query string, each as its lower-cased words (keywords and names; strings,
    quoted names and comments dropped): split on semicolons outside strings, quoted names, comments and
    dollar quotes."""
    out: list[tuple[str, ...]] = []
    words: list[str] = []
    pos = 0
    while pos < len(sql):
        match = _TOKEN.match(sql, pos)
        assert match is not None  # `other` matches any character
        kind, pos = match.lastgroup, match.end()
        if kind == "word":
            words.append(match.group().lower())
        elif kind == "semi":
            if words:
                out.append(tuple(words))
            words = []
        elif kind == "block":
            pos = _block_comment_end(sql, pos)
        elif kind == "dollar":
            end = sql.find(match.group(), pos)
            pos = len(sql) if end < 0 else end + len(match.group())
    if words:
        out.append(tuple(words))
    return out


def _block_comment_end(sql: str, pos: int) -> int:
    """Past the end of a block comment opened before `pos` (they nest)."""
    depth = 1
    while depth and pos < len(sql):
        if sql.startswith("/*", pos):
            depth, pos = depth + 1, pos + 2
        elif sql.startswith("*/", pos):
            depth, pos = depth - 1, pos + 2
        else:
            pos += 1
    return pos


BEGIN, COMMIT, ROLLBACK, WRITE = "begin", "commit", "rollback", "write"


def effect(words: tuple[str, ...]) -> str | None:
    """What a statement does to the transaction: begin, commit, rollback (its end without commit), write,
    or nothing the gate follows."""
    if not words:
        return None
    first, rest = words[0], words[1:]
    if first == "begin" or (first == "start" and rest[:1] == ("transaction",)):
        return BEGIN
    if first in ("commit", "end"):
        return COMMIT  # COMMIT, END, COMMIT AND CHAIN, COMMIT PREPARED 'id'
    if first in ("rollback", "abort"):
        return None if rest[:1] in (("to",), ("prepared",)) else ROLLBACK  # to a savepoint: still in the block
    if first == "prepare" and rest[:1] == ("transaction",):
        return ROLLBACK  # the transaction leaves the session: nothing is committed now
    if first in WRITES or (first == "copy" and "from" in rest and "to" not in rest):
        return WRITE
    if first == "with" and any(word in WRITES for word in rest):
        return WRITE  # a data-modifying WITH
    return None


@dataclass(frozen=True)
class PgCommit:
    """A commit as the frontend sent it: explicitly (`COMMIT`, `END`) or by an autocommit write."""

    how: str  # "commit" or "autocommit"
    statement: str  # the statement's words, as far as they name it
    via: str  # "Q" (simple query) or "E" (Execute of a prepared statement)

    def fields(self) -> dict:
        return {"phase": "request", "how": self.how, "statement": self.statement, "via": self.via}


@dataclass(frozen=True)
class PgAnswer:
    """A commit's cycle answered: its ReadyForQuery, and whether the server committed."""

    commits: tuple[PgCommit, ...]
    committed: bool
    tags: tuple[str, ...]
    error: str | None
    status: str  # I, T or E: the transaction status the ReadyForQuery reports

    def fields(self) -> dict:
        return {**self.commits[0].fields(), "phase": "response", "committed": self.committed, "tags": list(self.tags),
                "error": self.error, "status": self.status}


@dataclass
class _Cycle:
    """Frontend messages up to one Query, Sync or FunctionCall: answered by one ReadyForQuery."""

    commits: list[PgCommit] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    error: str | None = None
    ran: bool = False  # a query of it was followed (the gate's reading of the block is ahead of the server's)


class PgConnection:
    """One connection's transaction as the gate follows it: `sent` is told each frontend message and
    returns the commit it sends, `received` each backend message and returns the commit it answers."""

    def __init__(self) -> None:
        self.in_block = False  # after the messages sent so far: inside an explicit transaction block
        self.prepared: dict[str, str] = {}  # statement name -> its query
        self.portals: dict[str, str] = {}  # portal name -> its statement's query
        self.cycle = _Cycle()  # the cycle being sent
        self.answering: deque[_Cycle] = deque()  # cycles sent whose ReadyForQuery has not come yet
        self.startup_done = False  # the startup's ReadyForQuery came

    def sent(self, message: Message) -> PgCommit | None:
        kind, body = message.kind, message.body
        commit = None
        if kind == "Q":
            commit = self._run(_cstring(body, 0)[0], "Q")
            self._end_cycle()
        elif kind == "P":
            name, pos = _cstring(body, 0)
            self.prepared[name] = _cstring(body, pos)[0]
        elif kind == "B":
            portal, pos = _cstring(body, 0)
            self.portals[portal] = self.prepared.get(_cstring(body, pos)[0], "")
        elif kind == "E":
            commit = self._run(self.portals.get(_cstring(body, 0)[0], ""), "E")
        elif kind == "C":
            name = _cstring(body, 1)[0]
            (self.prepared if body[:1] == b"S" else self.portals).pop(name, None)
        elif kind in ("S", "F"):
            self._end_cycle()
        return commit

    def _run(self, sql: str, via: str) -> PgCommit | None:
        """Follow a query's statements; the commit it sends (the first, when it sends several)."""
        found = None
        self.cycle.ran = True
        for words in statements(sql):
            what = effect(words)
            if what == BEGIN:
                self.in_block = True
            elif what in (COMMIT, ROLLBACK):
                if what == COMMIT:
                    found = found or PgCommit("commit", " ".join(words[:3]), via)
                self.in_block = False
            elif what == WRITE and not self.in_block:
                found = found or PgCommit("autocommit", " ".join(words[:3]), via)
        if found is not None:
            self.cycle.commits.append(found)
        return found

    def _end_cycle(self) -> None:
        self.answering.append(self.cycle)
        self.cycle = _Cycle()

    def received(self, message: Message) -> PgAnswer | None:
        kind, body = message.kind, message.body
        cycle = self.answering[0] if self.answering and self.startup_done else None
        if kind == "C" and cycle is not None:
            cycle.tags.append(_cstring(body, 0)[0])
        elif kind == "E" and cycle is not None:
            cycle.error = _error_text(body)
        elif kind == "Z":
            status = chr(body[0]) if body else "I"
            if not self.startup_done:
                self.startup_done = True
                self.in_block = status != "I"
                return None
            if cycle is None:
                return None
            self.answering.popleft()
            if not self.answering and not self.cycle.ran:
                self.in_block = status != "I"  # the server's word over the gate's reading
            if cycle.commits:
                return PgAnswer(tuple(cycle.commits), _committed(cycle, status), tuple(cycle.tags), cycle.error,
                                status)
        return None


def _committed(cycle: _Cycle, status: str) -> bool:
    """An explicit commit committed when its tag says COMMIT (a COMMIT in a failed block says ROLLBACK);
    an autocommit write when its cycle ended without an error, outside a block."""
    if any(commit.how == "commit" for commit in cycle.commits):
        return "COMMIT" in cycle.tags
    return cycle.error is None and status == "I"


def _error_text(body: bytes) -> str:
    """An ErrorResponse as `SQLSTATE: message`."""
    fields: dict[str, str] = {}
    pos = 0
    while pos < len(body) and body[pos] != 0:
        code = chr(body[pos])
        value, pos = _cstring(body, pos + 1)
        fields[code] = value
    return f"{fields.get('C', '?')}: {fields.get('M', '')}"
