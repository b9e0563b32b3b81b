"""HTTP/1.1, as much as the gate needs to find a table's commit on its way to object storage or to a REST
catalog: each direction's byte stream cut into messages, and the whole answers the gate gives in the server's
place. What a request means is read elsewhere: an S3 request's in harness.gate.s3_requests, a REST catalog
request's in harness.gate.catalog_requests.

A message is told to the gate in parts, as its bytes come: its head (start line and headers) as soon as it is
whole, then its body in pieces, then its end. The gate forwards each part as it gets it, so a body is never
held unless the gate chooses to: a data file of any size streams through, and a client that sends
`Expect: 100-continue` gets its head forwarded and the server's `100 Continue` back before it sends the body
(a framer that waited for the whole request would wait forever). Where the gate must read a body before it
forwards it (a catalog commit's JSON, which says which snapshot it adds), it holds the parts up to a bound
(BodyBuffer).

A response's framing depends on the request it answers (a HEAD's answer has no body whatever its
Content-Length says), so the two framers of a connection share a queue of the requests sent and not yet
answered, in order, as pg_protocol's connection does with its cycles.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from http import HTTPStatus

# The longest head (start line and headers, or a chunked body's trailers) the gate reads: a head is held
# whole before it is forwarded. S3's and the catalog's clients send a few KiB; servers refuse past 8 to 64 KiB.
MAX_HEAD = 64 * 2**10
# The longest body the gate holds (a catalog commit's JSON, read before it is forwarded); every other body
# streams through. A commit carries its snapshot's summary and a few updates: kilobytes.
MAX_BODY = 16 * 2**20
MAX_CHUNK_LINE = 4096  # a chunk's size line, with its extensions

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_BLANK = re.compile(rb"(?:\r?\n)*")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(r"[0-9]{1,18}")  # ASCII only: str.isdigit() takes '²' and int() refuses it
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


class ProtocolError(ValueError):
    """Bytes that are not HTTP/1.1 as the gate reads it (a bad start line, header, length or chunk), or a
    message past the gate's bounds."""


Headers = tuple[tuple[str, str], ...]


def _header(headers: Headers, name: str) -> str | None:
    """A header's value (several fields of one name joined by commas, as RFC 9110 reads them)."""
    values = [value for key, value in headers if key.lower() == name.lower()]
    return ", ".join(values) if values else None


@dataclass(frozen=True)
class Request:
    """A request's head as on the wire (`raw`) and as read."""

    method: str
    target: str
    version: str
    headers: Headers
    raw: bytes

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)


@dataclass(frozen=True)
class Response:
    """A response's head as on the wire (`raw`) and as read, with the request it answers (None for an
    answer to no request, such as a 408 before a close)."""

    version: str
    status: int
    reason: str
    headers: Headers
    raw: bytes
    request: Request | None

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)

    @property
    def interim(self) -> bool:
        """A 1xx: the final answer to its request is still to come."""
        return self.status < 200


@dataclass(frozen=True)
class Body:
    """A piece of a body: its bytes on the wire, and the content they carry (the same, but for a chunked
    body's framing)."""

    raw: bytes
    data: bytes


@dataclass(frozen=True)
class End:
    """A message's end: the bytes that end it (a chunked body's last chunk and trailers; else none)."""

    raw: bytes = b""
    trailers: Headers = ()


Part = Request | Response | Body | End


def _head_lines(raw: bytes) -> list[str]:
    """A head's lines; a field value's octets as Latin-1 (RFC 9110 5.5: opaque), names and numbers checked
    against ASCII patterns."""
    return [line.removesuffix("\r") for line in raw.decode("latin-1").split("\n")]


def _fields(lines: list[str]) -> Headers:
    out = []
    for line in lines:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise ProtocolError(f"not a header field: {line[:80]!r}")  # an obs-fold continuation line too
        out.append((name, value.strip(" \t")))
    return tuple(out)


def _content_length(headers: Headers) -> int | None:
    value = _header(headers, "content-length")
    if value is None:
        return None
    lengths = {part.strip() for part in value.split(",")}  # the same length repeated is one length
    if len(lengths) != 1 or not _DIGITS.fullmatch(next(iter(lengths))):
        raise ProtocolError(f"Content-Length {value!r} is not one length")
    return int(next(iter(lengths)))


def _chunked(headers: Headers) -> bool:
    """The body is chunked (RFC 9112 6.1: then Content-Length does not count); a request's other transfer
    codings cannot be framed at all."""
    value = _header(headers, "transfer-encoding")
    if value is None:
        return False
    codings = [coding.strip().lower() for coding in value.split(",")]
    return codings[-1] == "chunked"


_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER, _CLOSE = range(7)


class _Framer:
    """What both directions share: the head, then a body by length, by chunks or to the connection's close."""

    def __init__(self, waiting: deque[Request]) -> None:
        self.waiting = waiting  # requests sent and not yet answered, shared by a connection's two framers
        self.buffer = bytearray()
        self.state = _HEAD
        self.remaining = 0
        self.parts: list[Part] = []
        self.body_raw = bytearray()
        self.body_data = bytearray()
        self.trailer = bytearray()  # a chunked body's last chunk and trailers, until the empty line
        self.blank = 0  # empty lines' bytes dropped before the current head

    def feed(self, data: bytes) -> list[Part]:
        """The parts `data` completes, in order; a partial head, chunk size line or trailer waits for the next
        feed, body bytes come out as they arrive."""
        self.buffer += data
        self.parts = []
        while self.buffer and self._step():
            pass
        self._flush()
        return self.parts

    def eof(self) -> list[Part]:
        """The connection closed this direction: a body read to the close ends here. A message cut short stays
        cut (the gate closes the other side too)."""
        if self.state != _CLOSE:
            return []
        self.state = _HEAD
        return [End()]

    @property
    def idle(self) -> bool:
        """Between messages, with nothing held: a close here cuts nothing."""
        return self.state == _HEAD and not self.buffer

    def _step(self) -> bool:
        """Read what the state needs from the buffer; False when it needs more bytes."""
        if self.state == _HEAD:
            return self._read_head()
        if self.state in (_LENGTH, _CHUNK_DATA, _CLOSE):
            take = len(self.buffer) if self.state == _CLOSE else min(self.remaining, len(self.buffer))
            piece = bytes(self.buffer[:take])
            del self.buffer[:take]
            self.body_raw += piece
            self.body_data += piece
            self.remaining -= take
            if self.state == _LENGTH and not self.remaining:
                self._end(b"")
            elif self.state == _CHUNK_DATA and not self.remaining:
                self.state = _CHUNK_CRLF
            return True
        if self.state == _CHUNK_CRLF:
            if len(self.buffer) < 2:
                return False
            if self.buffer[:2] != b"\r\n":
                raise ProtocolError(f"a chunk not followed by CRLF: {bytes(self.buffer[:2])!r}")
            self.body_raw += self.buffer[:2]
            del self.buffer[:2]
            self.state = _CHUNK_SIZE
            return True
        if self.state == _CHUNK_SIZE:
            return self._read_chunk_size()
        return self._read_trailer()

    def _read_head(self) -> bool:
        skipped = _BLANK.match(self.buffer).end()  # RFC 9112 2.2: empty lines before a request are ignored
        if skipped:  # dropped, so never scanned again, and counted against the head's bound
            self.blank += skipped
            del self.buffer[:skipped]
            if self.blank > MAX_HEAD:
                raise ProtocolError(f"more than {MAX_HEAD:,} bytes of empty lines before a head")
        found = _HEAD_END.search(self.buffer, 0, MAX_HEAD + 4)
        if found is None:
            if len(self.buffer) > MAX_HEAD:
                raise ProtocolError(f"a head longer than {MAX_HEAD:,} bytes")
            return False
        self.blank = 0
        raw = bytes(self.buffer[: found.end()])
        del self.buffer[: found.end()]
        lines = _head_lines(raw)
        self._head(lines[0], _fields(lines[1:]), raw)
        return True

    def _read_chunk_size(self) -> bool:
        end = self.buffer.find(b"\n", 0, MAX_CHUNK_LINE)
        if end < 0:
            if len(self.buffer) >= MAX_CHUNK_LINE:
                raise ProtocolError(f"a chunk size line longer than {MAX_CHUNK_LINE:,} bytes")
            return False
        line = bytes(self.buffer[: end + 1])
        size = line.split(b";", 1)[0].strip(b" \t\r\n")
        if not _HEX.fullmatch(size):
            raise ProtocolError(f"not a chunk size: {line[:40]!r}")
        del self.buffer[: end + 1]
        if int(size, 16):
            self.body_raw += line
            self.remaining = int(size, 16)
            self.state = _CHUNK_DATA
        else:
            self.trailer = bytearray(line)
            self.state = _TRAILER
        return True

    def _read_trailer(self) -> bool:
        """The trailer section after the last chunk: fields up to an empty line."""
        end = self.buffer.find(b"\n")
        if end < 0:
            if len(self.trailer) + len(self.buffer) > MAX_HEAD:
                raise ProtocolError(f"trailers longer than {MAX_HEAD:,} bytes")
            return False
        line = bytes(self.buffer[: end + 1])
        del self.buffer[: end + 1]
        self.trailer += line
        if len(self.trailer) > MAX_HEAD:
            raise ProtocolError(f"trailers longer than {MAX_HEAD:,} bytes")
        if line.strip(b"\r\n"):
            return True
        raw = bytes(self.trailer)
        lines = _head_lines(raw)
        self._end(raw, _fields(lines[1:]))
        return True

    def _flush(self) -> None:
        if self.body_raw:
            self.parts.append(Body(bytes(self.body_raw), bytes(self.body_data)))
            self.body_raw.clear()
            self.body_data.clear()

    def _end(self, raw: bytes, trailers: Headers = ()) -> None:
        self._flush()
        self.parts.append(End(raw, trailers))
        self.state = _HEAD

    def _body(self, headers: Headers, to_close: bool) -> None:
        """After a head: where its body ends."""
        if _chunked(headers):
            self.state = _CHUNK_SIZE
            return
        length = _content_length(headers)
        if length is None and to_close:
            self.state = _CLOSE
        elif length:
            self.state, self.remaining = _LENGTH, length
        else:
            self._end(b"")

    def _head(self, start: str, headers: Headers, raw: bytes) -> None:
        raise NotImplementedError


class RequestFramer(_Framer):
    """Cuts the client's byte stream into requests."""

    def _head(self, start: str, headers: Headers, raw: bytes) -> None:
        words = start.split(" ")
        if len(words) != 3 or not _TOKEN.fullmatch(words[0]) or not re.fullmatch(r"HTTP/1\.[01]", words[2]):
            raise ProtocolError(f"not a request line: {start[:80]!r}")
        if _header(headers, "transfer-encoding") is not None and not _chunked(headers):
            raise ProtocolError(f"a request's body in {_header(headers, 'transfer-encoding')!r}: no length")
        request = Request(words[0], words[1], words[2], headers, raw)
        self.waiting.append(request)
        self.parts.append(request)
        self._body(headers, to_close=False)  # a request without a length has no body (RFC 9112 6.3)


class ResponseFramer(_Framer):
    """Cuts the server's byte stream into responses, each paired with the request it answers."""

    def _head(self, start: str, headers: Headers, raw: bytes) -> None:
        match = re.fullmatch(r"(HTTP/1\.[01]) ([0-9]{3})(?: (.*))?", start)
        if match is None:
            raise ProtocolError(f"not a status line: {start[:80]!r}")
        status = int(match[2])
        if status == 101:
            raise ProtocolError("101 Switching Protocols: what follows is not HTTP")
        request = self.waiting[0] if self.waiting else None
        if status >= 200 and self.waiting:
            self.waiting.popleft()
        response = Response(match[1], status, match[3] or "", headers, raw, request)
        self.parts.append(response)
        if status < 200 or status in (204, 304) or (request is not None and request.method == "HEAD"):
            self._end(b"")  # no body, whatever the headers say (RFC 9112 6.3)
        else:
            self._body(headers, to_close=True)


def framers() -> tuple[RequestFramer, ResponseFramer]:
    """One connection's two framers, sharing its queue of requests waiting for their answer."""
    waiting: deque[Request] = deque()
    return RequestFramer(waiting), ResponseFramer(waiting)


class BodyBuffer:
    """A body the gate reads whole before it forwards it (a catalog commit's), refused past `limit`."""

    def __init__(self, request: Request, limit: int = MAX_BODY) -> None:
        length = _content_length(request.headers)
        if length is not None and length > limit and not _chunked(request.headers):
            raise ProtocolError(f"a body of {length:,} bytes to hold: more than {limit:,}")
        self.limit = limit
        self.raw: list[bytes] = []  # as on the wire, to forward
        self.data = bytearray()  # the content

    def add(self, body: Body) -> None:
        if len(self.data) + len(body.data) > self.limit:
            raise ProtocolError(f"a body to hold of more than {self.limit:,} bytes")
        self.raw.append(body.raw)
        self.data += body.data


# The answers the gate gives in a server's place ("answer 503 after applying"): an error as the server would
# send it, that its client reads as that server's, with `Connection: close` (the gate then closes: whatever
# the server sent, or would send, on that connection goes nowhere). Each server's error body is its module's
# (s3_requests.s3_error, catalog_requests.catalog_error).


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Authentication Timeout" if status == 419 else "Error"


def answer(request: Request, status: int, content_type: str, body: bytes, extra: Headers = ()) -> bytes:
    """A whole response with its Content-Length (no body after it for a HEAD, as a server sends)."""
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *extra, ("Connection", "close")]
    head = f"HTTP/1.1 {status} {_reason(status)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + (b"" if request.method == "HEAD" else body)


def retry_after_header(seconds: int | None) -> Headers:
    """The Retry-After header a server sends with a 503 or 429, when it says when to try again."""
    return () if seconds is None else (("Retry-After", str(seconds)),)
