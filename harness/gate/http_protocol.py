"""HTTP/1.1, as much as the gate needs to find a table's commit on its way to object storage or to a REST
catalog: each direction's byte stream cut into messages, the requests named (the points among them), and the
answers the gate gives in the server's place.

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

The points: `s3.put`, the PUT of a table's commit object (Delta's `_delta_log/<version>.json`, Iceberg's
`metadata/<...>.metadata.json`), and `catalog.commit`, an Iceberg REST catalog's commit of one table or of a
transaction over several (the pointer swap). Other requests are named by kind for the history only.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import deque
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.sax.saxutils import escape

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


@dataclass(frozen=True)
class Named:
    """What a request does, for the history (`kind`), and the point it reaches, if any (`point`), with what
    the gate reports of it."""

    kind: str
    point: str | None = None
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HttpCommit:
    """A request that is a point, as the client sent it."""

    method: str
    target: str
    details: dict = field(default_factory=dict)

    def fields(self) -> dict:
        return {"phase": "request", "method": self.method, "target": self.target, **self.details}


@dataclass(frozen=True)
class HttpAnswer:
    """A point's answer: the server's status (it acted on the request)."""

    commit: HttpCommit
    status: int

    def fields(self) -> dict:
        return {**self.commit.fields(), "phase": "response", "status": self.status}


S3_PUT = "s3.put"
CATALOG_COMMIT = "catalog.commit"

# A table's commit objects: Delta's log entry (its version, 20 digits), Iceberg's table metadata
# (`v<N>.metadata.json` in a Hadoop table, `<5-digit sequence>-<uuid>.metadata.json` from a catalog; a codec
# suffix such as `.gz.metadata.json` when compressed).
_DELTA_COMMIT = re.compile(r"(?:.*/)?_delta_log/(?P<version>[0-9]{20})\.json")
_ICEBERG_METADATA = re.compile(r"(?:.*/)?metadata/(?P<name>[^/]+)\.metadata\.json")
_ICEBERG_VERSION = re.compile(r"v?(?P<version>[0-9]+)(?:-[0-9a-fA-F-]{36})?(?:\.[a-z0-9]+)?")
# A virtual-hosted request's Host: `<bucket>.s3.<region>.amazonaws.com`, `<bucket>.s3-<region>...`
_VIRTUAL_HOST = re.compile(r"(?P<bucket>[a-z0-9][a-z0-9.-]*?)\.s3[.-].*")


def s3_location(request: Request, domain: str | None = None) -> tuple[str, str]:
    """The bucket and key a request names: in its path (`/bucket/key`, path-style), or the bucket in its Host
    (virtual-hosted: `bucket.s3.…`, or `bucket.<domain>` for a server that serves buckets as subdomains of
    `domain`)."""
    split = urlsplit(request.target)  # an origin-form target, or an absolute-form one through a proxy
    host = (split.hostname or (request.header("host") or "").rpartition(":")[0] or request.header("host") or "")
    host = host.lower()
    path = unquote(split.path).removeprefix("/")
    virtual = _VIRTUAL_HOST.fullmatch(host)
    if domain and host.endswith("." + domain.lower()):
        return host[: -len(domain) - 1], path
    if virtual:
        return virtual["bucket"], path
    bucket, _, key = path.partition("/")
    return bucket, key


def name_s3(request: Request, domain: str | None = None) -> Named:
    """An S3 request's kind; a write of a commit object is the point `s3.put`, by what it writes, however it
    is sent: a PUT, the completion of its multipart upload, or a copy onto it (`x-amz-copy-source`); its key
    as written or as a server that stores objects as files resolves it (`_delta_log/x/../N.json`)."""
    bucket, key = s3_location(request, domain)
    query = dict(parse_qsl(urlsplit(request.target).query, keep_blank_values=True))
    method = request.method
    where = {"bucket": bucket, **({"key": key} if key else {})}
    if not key:
        kind = {"PUT": "s3.create_bucket", "DELETE": "s3.delete_bucket", "HEAD": "s3.head_bucket"}.get(method)
        if method == "GET":
            kind = "s3.list_uploads" if "uploads" in query else "s3.list"
        elif method == "POST":
            kind = "s3.delete_objects" if "delete" in query else "s3.post"
        return Named(kind or f"s3.{method.lower()}", None, where)
    if method == "PUT" and "partNumber" in query:
        kind = "s3.copy_part" if request.header("x-amz-copy-source") else "s3.upload_part"
        return Named(kind, None, {**where, "part": query["partNumber"]})
    if method == "POST" and "uploads" in query:
        return Named("s3.create_upload", None, where)
    if method == "DELETE" and "uploadId" in query:
        return Named("s3.abort_upload", None, where)
    if method == "PUT" and request.header("x-amz-copy-source"):
        source = unquote(request.header("x-amz-copy-source") or "")
        commit = commit_object(key)
        return Named("s3.copy", S3_PUT if commit else None, {**where, "source": source, **(commit or {})})
    multipart = method == "POST" and "uploadId" in query
    if method != "PUT" and not multipart:
        kind = {"GET": "s3.get", "HEAD": "s3.head", "DELETE": "s3.delete"}.get(method, f"s3.{method.lower()}")
        return Named(kind, None, where)
    kind = "s3.complete_upload" if multipart else "s3.put"
    commit = commit_object(key)
    if commit is None:
        return Named(kind, None, where)
    conditions = {name: request.header(name) for name in ("if-none-match", "if-match")}
    return Named(kind, S3_PUT, {**where, **commit, "multipart": multipart,
                                "conditional": {k: v for k, v in conditions.items() if v is not None}})


def commit_object(key: str) -> dict | None:
    """A table's commit object's format and version, None for any other key: as written, or with its dot
    segments resolved (a server that keeps objects as files stores `a/x/../b` at `a/b`)."""
    found = _commit_object(key)
    if found is None and any(segment in (".", "..") for segment in key.split("/")):
        found = _commit_object(posixpath.normpath(key).lstrip("/"))
    return found


def _commit_object(key: str) -> dict | None:
    delta = _DELTA_COMMIT.fullmatch(key)
    if delta:
        return {"format": "delta", "version": int(delta["version"])}
    iceberg = _ICEBERG_METADATA.fullmatch(key)
    if iceberg:
        version = _ICEBERG_VERSION.fullmatch(iceberg["name"])
        return {"format": "iceberg", "version": int(version["version"]) if version else None}
    return None


# An Iceberg REST catalog's routes after `/v1/` and its optional prefix, by method and path shape (`{ns}` a
# namespace, `{t}` a table or view's name): the kind each is named by.
_CATALOG_ROUTES: dict[tuple[str, tuple[str, ...]], str] = {
    ("GET", ("namespaces",)): "catalog.list_namespaces",
    ("POST", ("namespaces",)): "catalog.create_namespace",
    ("GET", ("namespaces", "{ns}")): "catalog.load_namespace",
    ("HEAD", ("namespaces", "{ns}")): "catalog.namespace_exists",
    ("DELETE", ("namespaces", "{ns}")): "catalog.drop_namespace",
    ("POST", ("namespaces", "{ns}", "properties")): "catalog.update_namespace",
    ("GET", ("namespaces", "{ns}", "tables")): "catalog.list_tables",
    ("POST", ("namespaces", "{ns}", "tables")): "catalog.create_table",
    ("POST", ("namespaces", "{ns}", "register")): "catalog.register_table",
    ("GET", ("namespaces", "{ns}", "tables", "{t}")): "catalog.load_table",
    ("HEAD", ("namespaces", "{ns}", "tables", "{t}")): "catalog.table_exists",
    ("DELETE", ("namespaces", "{ns}", "tables", "{t}")): "catalog.drop_table",
    ("POST", ("namespaces", "{ns}", "tables", "{t}")): CATALOG_COMMIT,
    ("GET", ("namespaces", "{ns}", "tables", "{t}", "credentials")): "catalog.load_credentials",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "metrics")): "catalog.report_metrics",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "plan")): "catalog.plan",
    ("GET", ("namespaces", "{ns}", "tables", "{t}", "plan", "{id}")): "catalog.plan_result",
    ("DELETE", ("namespaces", "{ns}", "tables", "{t}", "plan", "{id}")): "catalog.cancel_plan",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "tasks")): "catalog.plan_tasks",
    ("POST", ("tables", "rename")): "catalog.rename_table",
    ("POST", ("transactions", "commit")): CATALOG_COMMIT,
    ("GET", ("namespaces", "{ns}", "views")): "catalog.list_views",
    ("POST", ("namespaces", "{ns}", "views")): "catalog.create_view",
    ("GET", ("namespaces", "{ns}", "views", "{t}")): "catalog.load_view",
    ("HEAD", ("namespaces", "{ns}", "views", "{t}")): "catalog.view_exists",
    ("POST", ("namespaces", "{ns}", "views", "{t}")): "catalog.replace_view",
    ("DELETE", ("namespaces", "{ns}", "views", "{t}")): "catalog.drop_view",
    ("POST", ("views", "rename")): "catalog.rename_view",
    ("POST", ("namespaces", "{ns}", "register-view")): "catalog.register_view",
}
# A multi-level namespace's parts in one path segment: `%1F` unless the config endpoint's answer overrides
# `namespace-separator` (RESTCatalogServer, Iceberg's test server, says `%2E`).
NAMESPACE_SEPARATOR = "%1F"


def _catalog_route(method: str, segments: list[str], separator: str) -> tuple[str, dict] | None:
    for (route_method, shape), kind in _CATALOG_ROUTES.items():
        if route_method != method or len(shape) != len(segments):
            continue
        found: dict = {}
        for want, segment in zip(shape, segments, strict=True):
            if want == "{ns}":
                found["namespace"] = [unquote(part) for part in re.split(re.escape(separator), segment, flags=re.I)]
            elif want == "{id}":
                found["plan"] = unquote(segment)
            elif want == "{t}":
                found["name"] = unquote(segment)
            elif want != segment:
                break
        else:
            return kind, found
    return None


def catalog_route(request: Request, separator: str = NAMESPACE_SEPARATOR) -> Named:
    """A catalog request's kind and the table or namespace its path names, without its body. The prefix
    (`/v1/{prefix}/...`, from the config endpoint's answer) is optional: a path is read without one first."""
    split = urlsplit(request.target)
    segments = split.path.strip("/").split("/")
    if segments[:1] != ["v1"]:
        return Named(f"catalog.{request.method.lower()}", None, {"path": split.path})
    segments = segments[1:]
    if segments == ["config"]:
        return Named("catalog.config", None, dict(parse_qsl(split.query)))
    if segments == ["oauth", "tokens"]:
        return Named("catalog.oauth_tokens")
    for prefix, rest in ((None, segments), (unquote(segments[0]) if segments else None, segments[1:])):
        route = _catalog_route(request.method, rest, separator)
        if route is not None:
            kind, found = route
            details = {**({"prefix": prefix} if prefix is not None else {}), **found}
            return Named(kind, kind if kind == CATALOG_COMMIT else None, details)
    return Named(f"catalog.{request.method.lower()}", None, {"path": split.path})


def wants_body(request: Request) -> bool:
    """The gate reads this request's body before it forwards it: a catalog commit's, which says what it
    commits."""
    return catalog_route(request).point == CATALOG_COMMIT


def name_catalog(request: Request, body: bytes | None = None, separator: str = NAMESPACE_SEPARATOR) -> Named:
    """A catalog request's kind; a commit's details from its JSON body (when given): per table, the snapshots
    it adds, the refs it sets and the `assert-ref-snapshot-id` it requires."""
    named = catalog_route(request, separator)
    if named.point != CATALOG_COMMIT or body is None:
        return named
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"a catalog commit's body is not JSON: {e}") from None
    if not isinstance(document, dict):
        raise ProtocolError("a catalog commit's body is not a JSON object")
    if "table-changes" in document:  # POST transactions/commit
        changes = document["table-changes"]
        if not isinstance(changes, list):
            raise ProtocolError("a transaction's `table-changes` is not a list")
        tables = [_table_change(change, None) for change in changes]
    else:
        tables = [_table_change(document, {"namespace": named.details["namespace"], "name": named.details["name"]})]
    return Named(named.kind, named.point, {**named.details, "tables": tables})


def _table_change(change: object, identifier: dict | None) -> dict:
    """One table's commit: its identifier (the path's, or the body's in a transaction), the snapshot ids its
    updates add, the refs they set, and the ref snapshot ids its requirements assert."""
    if not isinstance(change, dict):
        raise ProtocolError("a table's commit is not a JSON object")
    updates, requirements = change.get("updates", []), change.get("requirements", [])
    if not isinstance(updates, list) or not isinstance(requirements, list):
        raise ProtocolError("a table commit's `updates` or `requirements` is not a list")
    updates = [u for u in updates if isinstance(u, dict)]
    requirements = [r for r in requirements if isinstance(r, dict)]
    body_identifier = change.get("identifier")
    if identifier is None and isinstance(body_identifier, dict):
        identifier = {"namespace": body_identifier.get("namespace"), "name": body_identifier.get("name")}
    return {
        "table": identifier,
        "adds_snapshots": [u["snapshot"].get("snapshot-id") for u in updates
                           if u.get("action") == "add-snapshot" and isinstance(u.get("snapshot"), dict)],
        "sets_refs": {u.get("ref-name"): u.get("snapshot-id") for u in updates
                      if u.get("action") == "set-snapshot-ref"},
        "asserts_refs": {r.get("ref"): r.get("snapshot-id") for r in requirements
                         if r.get("type") == "assert-ref-snapshot-id"},
        "creates": any(r.get("type") == "assert-create" for r in requirements),
    }


# The answers the gate gives in a server's place ("answer 503 after applying"): an error as the server would
# send it, that its client reads as that server's, with `Connection: close` (the gate then closes: whatever
# the server sent, or would send, on that connection goes nowhere).

# S3's error codes by status. S3 sends no 502 or 504 of its own (a proxy in front of it does): those get its
# generic server error. `SlowDown` (503, throttling) is another 503 a caller may choose.
S3_CODES = {400: "InvalidRequest", 403: "AccessDenied", 404: "NoSuchKey", 409: "ConditionalRequestConflict",
            412: "PreconditionFailed", 500: "InternalError", 501: "NotImplemented", 502: "InternalError",
            503: "ServiceUnavailable", 504: "InternalError"}
# The Iceberg REST spec's error types by status, as its examples give them for a table commit's answers:
# 500, 502 and 504 leave the commit's outcome unknown to the client, 409 says it failed.
CATALOG_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
                 404: "NoSuchTableException", 409: "CommitFailedException", 419: "AuthenticationTimeoutException",
                 500: "CommitStateUnknownException", 502: "CommitStateUnknownException",
                 503: "SlowDownException", 504: "CommitStateUnknownException"}


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Authentication Timeout" if status == 419 else "Error"


def _response(request: Request, status: int, content_type: str, body: bytes, extra: Headers = ()) -> bytes:
    """A whole response with its Content-Length (no body after it for a HEAD, as a server sends)."""
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *extra, ("Connection", "close")]
    head = f"HTTP/1.1 {status} {_reason(status)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + (b"" if request.method == "HEAD" else body)


def s3_error(request: Request, status: int, message: str, code: str | None = None, request_id: str = "gate",
             domain: str | None = None, retry_after: int | None = None) -> bytes:
    """S3's answer to `request` with `status`: its XML Error document (the code S3 gives that status unless
    `code` is given), naming the request's object as its Resource."""
    code = code or S3_CODES.get(status)
    if code is None:
        raise ValueError(f"no S3 error code for status {status}: give one")
    bucket, key = s3_location(request, domain)
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
            f"<Resource>/{escape(bucket)}{'/' + escape(key) if key else ''}</Resource>"
            f"<RequestId>{escape(request_id)}</RequestId></Error>").encode()
    return _response(request, status, "application/xml", body,
                     (("x-amz-request-id", request_id), *_retry_after(retry_after)))


def catalog_error(request: Request, status: int, message: str, type: str | None = None,
                  retry_after: int | None = None) -> bytes:
    """An Iceberg REST catalog's answer to `request` with `status`: its ErrorModel JSON (the type the spec
    gives that status unless `type` is given)."""
    type = type or CATALOG_TYPES.get(status)
    if type is None:
        raise ValueError(f"no Iceberg REST error type for status {status}: give one")
    body = json.dumps({"error": {"message": message, "type": type, "code": status}}).encode()
    return _response(request, status, "application/json", body, _retry_after(retry_after))


def _retry_after(seconds: int | None) -> Headers:
    """The Retry-After header a server sends with a 503 or 429, when it says when to try again."""
    return () if seconds is None else (("Retry-After", str(seconds)),)
