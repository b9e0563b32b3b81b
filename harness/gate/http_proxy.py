"""The gate's HTTP connections (the run's S3 server's, its REST catalog's): messages forwarded part by part as
they come (harness.gate.http_framing), a table's commit reported as a point (`s3.put`: the PUT of a commit
object, harness.gate.s3_requests; `catalog.commit`: an Iceberg REST commit, harness.gate.catalog_requests) as
it arrives and again as it is answered, and held there on the interceptor's word: a request held, the server
has not seen it; an answer held, the server applied it and the client does not know. A catalog commit's body
is read whole before it is forwarded (it says which snapshot it adds); every other body streams through. Each
object the S3 server answers it wrote is kept (harness.gate.object_writes), and one written again is recorded
as `s3.overwrite`.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from harness.gate.catalog_requests import catalog_error, name_catalog, wants_body
from harness.gate.http_framing import (
    Body,
    BodyBuffer,
    End,
    ProtocolError,
    Request,
    RequestFramer,
    Response,
    ResponseFramer,
    framers,
)
from harness.gate.http_points import HttpAnswer, HttpCommit, Named
from harness.gate.object_writes import WRITES, ObjectWrites
from harness.gate.points import HOLD_REQUEST, HOLD_RESPONSE, Failed, GateEvent, Peer
from harness.gate.pumps import flush, read_chunk
from harness.gate.s3_requests import CommitKeys, name_s3, s3_error

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Writes = dict[int, tuple[str, str]]  # id(request) -> the bucket and key of an object it writes


class _Gate(Protocol):
    """What these pumps use of the gate (harness.gate.proxy.KafkaGate)."""

    objects: ObjectWrites
    commit_keys: CommitKeys

    def record(self, type: str, **fields: object) -> object: ...

    def refuse(self, peer: Peer, connection: int, direction: str, why: str) -> None: ...

    async def intercept(self, event: GateEvent, what: str) -> bool | Failed: ...

    async def forward(self, writer: asyncio.StreamWriter, data: bytes) -> None: ...


def http_pumps(gate: _Gate, client: Stream, server: Stream, peer: Peer, connection: int) -> list[asyncio.Future]:
    """The two directions of one connection; either ending (a hold dropped, a side closed) ends both."""
    gate.record("gate.connection", service=peer.service, container=peer.container, role=peer.role,
                connection=connection)
    requests, responses = framers()
    points: dict[int, tuple[Request, str, HttpCommit]] = {}  # id(request) -> it, its point, what it was
    writes: Writes = {}
    return [asyncio.ensure_future(_requests(gate, client[0], server[1], peer, connection, requests, points, writes)),
            asyncio.ensure_future(_responses(gate, server[0], client[1], peer, connection, responses, points,
                                             writes))]


def _named(peer: Peer, request: Request, commits: CommitKeys, body: bytes | None = None) -> Named:
    return name_catalog(request, body) if peer.service == "catalog" else name_s3(request, commits=commits)


async def _requests(gate: _Gate, reader: asyncio.StreamReader, server: asyncio.StreamWriter, peer: Peer,
                    connection: int, framer: RequestFramer, points: dict[int, tuple[Request, str, HttpCommit]],
                    writes: Writes) -> None:
    held: tuple[Request, BodyBuffer] | None = None  # a request whose body is read before it goes on
    while data := await read_chunk(reader):
        out = bytearray()
        try:
            for part in framer.feed(data):
                if isinstance(part, Request):
                    if peer.service == "catalog" and wants_body(part):
                        held = (part, BodyBuffer(part))
                        continue
                    named = _named(peer, part, gate.commit_keys)
                    if named.kind in WRITES and peer.service == "s3":
                        writes[id(part)] = (named.details["bucket"], named.details["key"])
                    if not await _point(gate, server, out, peer, connection, part, named, points):
                        return
                    out += part.raw
                elif isinstance(part, Body) and held is not None:
                    held[1].add(part)
                elif isinstance(part, End) and held is not None:
                    request, buffer = held
                    held = None
                    named = _named(peer, request, gate.commit_keys, bytes(buffer.data))
                    if not await _point(gate, server, out, peer, connection, request, named, points):
                        return
                    out += request.raw + b"".join(buffer.raw) + part.raw
                else:
                    out += part.raw
        except ProtocolError as error:
            gate.refuse(peer, connection, HOLD_REQUEST, str(error))
            return
        await flush(gate, server, out)


async def _point(gate: _Gate, writer: asyncio.StreamWriter, out: bytearray, peer: Peer, connection: int,
                 request: Request, named: Named, points: dict[int, tuple[Request, str, HttpCommit]]) -> bool:
    """A request that is a point: what came before it forwarded, then the interceptor asked; False when its
    hold was dropped (the connection ends)."""
    if named.point is None:
        return True
    await flush(gate, writer, out)
    commit = HttpCommit(request.method, request.target, named.details)
    points[id(request)] = (request, named.point, commit)
    return await gate.intercept(GateEvent(named.point, peer, connection, commit), HOLD_REQUEST)


async def _responses(gate: _Gate, reader: asyncio.StreamReader, client: asyncio.StreamWriter, peer: Peer,
                     connection: int, framer: ResponseFramer,
                     points: dict[int, tuple[Request, str, HttpCommit]], writes: Writes) -> None:
    while True:
        data = await read_chunk(reader)
        out = bytearray()
        try:
            parts = framer.feed(data) if data else framer.eof()
            for part in parts:
                if isinstance(part, Response) and not part.interim and part.request is not None:
                    written = writes.pop(id(part.request), None)
                    overwrite = written and gate.objects.answered(*written, part.status, peer)
                    if overwrite:
                        gate.record("s3.overwrite", **overwrite)
                    reached = points.pop(id(part.request), None)
                    if reached is not None:
                        await flush(gate, client, out)
                        event = GateEvent(reached[1], peer, connection, HttpAnswer(reached[2], part.status))
                        outcome = await gate.intercept(event, HOLD_RESPONSE)
                        if outcome is False:
                            return
                        if isinstance(outcome, Failed):  # a `fail` step: its answer in the server's place, closed
                            await gate.forward(client, _failed(peer, part.request, outcome))
                            return
                out += part.raw
        except ProtocolError as error:
            gate.refuse(peer, connection, HOLD_RESPONSE, str(error))
            return
        await flush(gate, client, out)
        if not data:
            return


def _failed(peer: Peer, request: Request, failed: Failed) -> bytes:
    status, after = failed.status, failed.retry_after
    message = f"the harness answers {status} in the server's place (a fail step)"
    if peer.service == "catalog":
        return catalog_error(request, status, message, retry_after=after)
    return s3_error(request, status, message, retry_after=after)
