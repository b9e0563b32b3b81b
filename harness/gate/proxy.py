"""The gate: a TCP proxy between the system under test and toxiproxy that reads Kafka's framing (and
PostgreSQL's: harness.gate.pg_proxy).

The system under test connects to the run's relay (harness.gate.relay), a container on its network; the
relay announces each connection and the gate claims it over the relay's published port, so that no
container needs to reach this host, and sends it on through the relay's tunnel to toxiproxy. It
attributes each connection to a container and role by source address, routes it through that role's
toxiproxy link, and names the points a request reaches: some as it arrives (held there, the broker has
not seen it), some as its response comes back (held there, the broker acted but the client does not
know). On an interceptor's word it holds the frame at that point until
released or dropped. It runs its own asyncio loop in a thread; holds are released from any thread.
A client of PostgreSQL comes in on the relay's PostgreSQL port (announced as `pg`) and goes through its
role's toxiproxy link to the server.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable

from harness.gate.copies import CopiedWrites
from harness.gate.frame_pool import FramePool
from harness.gate.http_proxy import http_pumps
from harness.gate.object_writes import ObjectWrites
from harness.gate.pg_proxy import pg_pumps
from harness.gate.points import (
    FOR_WATCHER,
    HOLD_REQUEST,
    HOLD_RESPONSE,
    Failed,
    GateEvent,
    Hold,
    Interceptor,
    Observe,
    Peer,
)
from harness.gate.protocol import (
    ADD_PARTITIONS_TO_TXN,
    API_VERSIONS,
    BODY_CLASSES,
    END_TXN,
    INIT_PRODUCER_ID,
    MAX_FRAME,
    MIN_FRAME,
    PRODUCE,
    PRODUCE_READ_UP_TO,
    RequestInfo,
    capped_api_versions,
    parse_request,
    response_correlation_id,
)
from harness.gate.record_batches import fingerprints
from harness.gate.relay import SERVICE_PORTS, keep_alive
from harness.gate.s3_requests import CommitKeys, no_commits

INSPECTED = {PRODUCE, *BODY_CLASSES}
# Client connections from one container at once, as a broker's `max.connections.per.ip` bounds them: a Spark
# executor's producers and consumers open a few each; a sink opening thousands is refused past this, and said so.
CONNECTIONS_PER_PEER = 256


class KafkaGate:
    """The proxy. `relay` is the relay's service port as this host reaches it; `resolve(ip)` names the peer;
    `upstream(peer)` gives its (host, port) through toxiproxy, on the run's network: the relay's tunnel
    reaches it there, so that toxiproxy's links need not be published."""

    def __init__(
        self,
        relay: tuple[str, int],
        resolve: Callable[[str], Peer],
        upstream: Callable[[Peer], tuple[str, int]],
        secret: str,
    ) -> None:
        self.relay = relay
        self.secret = secret  # the run's: the relay closes any connection without it
        self.failure: str | None = None  # why the gate can no longer route the system under test
        self._stopping = False
        self.resolve = resolve
        self.upstream = upstream
        self.interceptor: Interceptor = Observe()
        self.record: Callable[..., object] = lambda type, **fields: None
        self.holds: list[Hold] = []
        self.outputs: set[str] = set()  # the scenario's output topics: a plain write to one is `produce.sent`
        self.backends: dict[int, Peer] = {}  # a PostgreSQL server process -> the peer it serves (harness.gate.pg_proxy)
        self.bytes_forwarded = 0
        self.frames_refused = 0  # connections closed for what their sender sent (refuse)
        self._in_transaction: set[str] = set()
        self.writes: dict[str, tuple[str, int]] = {}  # transactional id -> a partition it last added
        self.objects = ObjectWrites()  # what the S3 server wrote (harness.gate.object_writes)
        self.commit_keys: CommitKeys = no_commits  # which S3 objects commit the run's table: its store's
        self.copies: CopiedWrites | None = None  # set while a run looks for a task's copy on the wire
        self.paused: set[str] = set()  # containers the nemesis paused (a copy runs while its first attempt is)
        self.last_transactional_id: str | None = None  # whose coordinator a fault off a request aims at
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._control: asyncio.StreamWriter | None = None
        self._claims: set[asyncio.Future] = set()
        self._connections: set[asyncio.StreamWriter] = set()
        self._open_from: Counter[str] = Counter()  # a container -> its client connections open now
        self._pool = FramePool()  # the bytes of Kafka frames read and not yet forwarded, from every connection
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-gate", daemon=True)

    def start(self) -> KafkaGate:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._attach(), self._loop)
        future.result(timeout=30)
        return self

    async def _attach(self) -> None:
        """Open the control connection: from now on the relay announces its clients to this gate."""
        reader, self._control = await asyncio.open_connection(*self.relay)
        keep_alive(self._control.get_extra_info("socket"))
        self._control.write(f"{self.secret} control\n".encode())
        if await reader.readline() != b"ready\n":
            raise ConnectionError(f"the relay at {self.relay[0]}:{self.relay[1]} did not answer")
        announcements = asyncio.ensure_future(self._announcements(reader))
        self._claims.add(announcements)

    async def _announcements(self, control: asyncio.StreamReader) -> None:
        """Claim each client the relay announces (`<id> <address> <port> <broker>`) with a data connection of
        its own."""
        while line := await control.readline():
            number, address, port, broker = line.decode().split()
            claim = asyncio.ensure_future(self._claim(number, address, int(port), broker))
            self._claims.add(claim)
            claim.add_done_callback(self._claims.discard)
        if not self._stopping:  # no client can be routed from now on: every later scenario would stall
            self.failure = f"the relay's control connection at {self.relay[0]}:{self.relay[1]} closed"
            self.record("gate.lost", error=self.failure)

    async def _claim(self, number: str, address: str, port: int, broker: str) -> None:
        try:
            reader, writer = await asyncio.open_connection(*self.relay, limit=2**20)
        except OSError as error:
            self.record("gate.refused", source=address, error=repr(error))
            return
        writer.write(f"{self.secret} data {number}\n".encode())
        await self._accept(reader, writer, address, port, broker)

    def stop(self) -> None:
        self._stopping = True

        async def close() -> None:
            if self._control is not None:
                self._control.close()
            for claim in list(self._claims):
                claim.cancel()
            for writer in list(self._connections):
                writer.close()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def settle_all(self, forward: bool = True) -> None:
        """Release (or drop) every hold still open: part of healing."""
        for hold in self.holds:
            if not hold.settled:
                hold.release() if forward else hold.drop()

    def open_holds(self) -> list[Hold]:
        return [hold for hold in self.holds if not hold.settled]

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter,
                      address: str, port: int, broker: str) -> None:
        """Route one client: `broker` is the node id it asked for, or a service's name (relay.SERVICE_PORTS)."""
        connection = next(self._ids)
        try:
            to = {"service": broker} if broker in SERVICE_PORTS else {"broker": int(broker)}
            peer = dataclasses.replace(await self._loop.run_in_executor(None, self.resolve, address), port=port, **to)
            if self._open_from[peer.container] >= CONNECTIONS_PER_PEER:
                raise ConnectionRefusedError(f"{peer.container} has {CONNECTIONS_PER_PEER} connections open")
            host, port = await self._loop.run_in_executor(None, self.upstream, peer)
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.relay, limit=2**20)
            upstream_writer.write(f"{self.secret} connect {host} {port}\n".encode())  # the relay goes on to it
        except Exception as error:  # noqa: BLE001 - an unroutable peer is closed, and said so
            self.record("gate.refused", source=address, error=repr(error))
            client_writer.close()
            return
        self._connections.update((client_writer, upstream_writer))
        self._open_from[peer.container] += 1
        if peer.service == "postgres":
            pumps = pg_pumps(self, (client_reader, client_writer), (upstream_reader, upstream_writer), peer,
                             connection)
        elif peer.service != "kafka":
            pumps = http_pumps(self, (client_reader, client_writer), (upstream_reader, upstream_writer), peer,
                               connection)
        else:
            pending: dict[int, tuple[str, RequestInfo]] = {}  # correlation id -> the point its response reaches
            asked: dict[int, int] = {}  # an ApiVersions request's correlation id -> its version
            pumps = [
                asyncio.ensure_future(self._requests(client_reader, upstream_writer, peer, connection, pending,
                                                     asked)),
                asyncio.ensure_future(self._responses(upstream_reader, client_writer, peer, connection, pending,
                                                      asked)),
            ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        for writer in (client_writer, upstream_writer):
            writer.close()
            self._connections.discard(writer)
        self._open_from[peer.container] -= 1

    def refuse(self, peer: Peer, connection: int, direction: str, why: str) -> None:
        """Count and report a connection closed for bytes that are not the protocol's (a frame's size out of
        range): what the system under test sends ends its own connection, never the gate."""
        self.frames_refused += 1
        self.record("gate.frame_refused", direction=direction, why=why, container=peer.container, role=peer.role,
                    source=f"{peer.address}:{peer.port}", connection=connection)

    async def _frames(self, reader: asyncio.StreamReader, peer: Peer, connection: int,
                      direction: str):  # type: ignore[no-untyped-def]
        """A direction's frames (size bytes, payload) until it closes, or until a size out of range (refused):
        the frame is never read, and the pump's end closes the connection. A frame is read once its size is
        taken from the gate's pool (frame_pool), and gives it back once its consumer forwarded it."""
        while True:
            try:
                size_bytes = await reader.readexactly(4)
                (size,) = struct.unpack(">i", size_bytes)
                if not MIN_FRAME <= size <= MAX_FRAME:
                    self.refuse(peer, connection, direction, f"a frame of {size:,} bytes (from {MIN_FRAME} to "
                                                             f"{MAX_FRAME:,})")
                    return
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            await self._pool.take(size)
            try:
                payload = await reader.readexactly(size)
                yield size_bytes, payload
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            finally:
                self._pool.give(size)

    async def _requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer, connection: int,
        pending: dict[int, tuple[str, RequestInfo]], asked: dict[int, int],
    ) -> None:
        async for size_bytes, payload in self._frames(reader, peer, connection, HOLD_REQUEST):
            api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload, 0)
            if api_key == API_VERSIONS:  # its answer is capped on its way back (protocol.capped_api_versions)
                asked[correlation_id] = api_version
            if api_key == PRODUCE and api_version > PRODUCE_READ_UP_TO:
                self.record("gate.unread", api_key=api_key, api_version=api_version, peer=peer.container,
                            why="a Produce that names topics by id, past the version the gate's ApiVersions "
                                "answer allowed: its writes are not matched to the output topic")
            if api_key in INSPECTED:
                try:
                    request = parse_request(payload)
                except Exception as error:  # noqa: BLE001 - forward what we cannot read, and say so
                    self.record("gate.parse_error", api_key=api_key, error=repr(error), head=payload[:64].hex())
                    request = None
                if request is not None:
                    if self.copies is not None and request.record_sets and peer.role == "executors":
                        self._look_for_copies(self.copies, peer, payload, request)
                    at_request, at_response = self._points(request)
                    if at_response is not None:
                        pending[request.correlation_id] = (at_response, request)
                    if at_request is not None and not await self.intercept(
                        GateEvent(at_request, peer, connection, request), HOLD_REQUEST
                    ):
                        return
            await self.forward(writer, size_bytes + payload)

    async def _responses(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer, connection: int,
        pending: dict[int, tuple[str, RequestInfo]], asked: dict[int, int],
    ) -> None:
        async for size_bytes, payload in self._frames(reader, peer, connection, HOLD_RESPONSE):
            if asked and (version := asked.pop(response_correlation_id(payload), None)) is not None:
                try:
                    payload = capped_api_versions(payload, version)
                except Exception as error:  # noqa: BLE001 - forward what we cannot read, and say so
                    self.record("gate.parse_error", api_key=API_VERSIONS, error=repr(error), head=payload[:64].hex())
            if pending:
                answered = pending.pop(response_correlation_id(payload), None)
                if answered is not None and not await self.intercept(
                    GateEvent(answered[0], peer, connection, answered[1]), HOLD_RESPONSE
                ):
                    return
            await self.forward(writer, size_bytes + payload)

    def _look_for_copies(self, copies: CopiedWrites, peer: Peer, payload: bytes, request: RequestInfo) -> None:
        """Record a write to the output that copies what a stopped executor's container wrote, or what
        such a container writes that its copy wrote meanwhile (harness.gate.copies)."""
        sets = [(topic, start, end) for topic, start, end in request.record_sets if topic in self.outputs]
        if not sets:
            return
        try:
            view = memoryview(payload)
            prints = [mark for topic, start, end in sets for mark in fingerprints(view[start:end], topic)]
        except ValueError as error:
            if (peer.container, str(error)) not in copies.unread:
                copies.unread.add((peer.container, str(error)))
                self.record("write.unread", container=peer.container, why=str(error))
            return
        stopped = self.paused | {hold.event.peer.container for hold in self.open_holds()
                                 if hold.event.peer.role == "executors"}
        was_full = copies.full
        for (attempt, copy), records in copies.written(peer.container, prints, stopped).items():
            self.record("write.copied", attempt=attempt, copy=copy, records=records)
        if copies.full and not was_full:
            self.record("write.unread", container=peer.container,
                        why=f"past {copies.limit:,} records written, the later ones are not compared")

    async def forward(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        """Write frames on; wait for the peer only when a megabyte is buffered."""
        writer.write(data)
        self.bytes_forwarded += len(data)
        if writer.transport.get_write_buffer_size() > 2**20:
            await writer.drain()

    def _points(self, request: RequestInfo) -> tuple[str | None, str | None]:
        """The points a request reaches (as it arrives, as its response comes back); tracks whether each
        transactional id is inside a transaction."""
        txn = request.transactional_id
        if txn is not None:
            self.last_transactional_id = txn
        if request.api_key == INIT_PRODUCER_ID:
            if txn is None:
                return None, None
            self._in_transaction.discard(txn)
            return "txn.init", None
        if request.api_key == END_TXN:
            self._in_transaction.discard(txn or "")
            return ("txn.pre_commit", "txn.commit") if request.committed else ("txn.abort", None)
        if request.api_key == PRODUCE and txn is None:
            # Held on its response the write is in the log and the sender does not know: a sender that
            # dies then has its whole write retried. With acks=0 there is no response to hold. Held as it
            # arrives (`produce.sent`, a write to the output) the broker has not seen it: released later it
            # lands after whatever was written meanwhile, whatever became of its sender.
            if not request.acks:
                return "produce", None
            sent = any(topic in self.outputs for topic, _ in request.partitions)
            return ("produce.sent" if sent else None), "produce"
        if request.api_key in (ADD_PARTITIONS_TO_TXN, PRODUCE):
            if txn is not None and request.partitions:
                self.writes[txn] = request.partitions[0]
            if txn is None or txn in self._in_transaction:
                return None, None
            self._in_transaction.add(txn)
            return "txn.first_write", None
        return None, None

    async def intercept(self, event: GateEvent, what: str) -> bool | Failed:
        """Record the point; hold when the interceptor asks to. False: drop the connection; an HTTP status:
        answer with it in the server's place (a `fail` step)."""
        self.record("point", **event.fields())
        wanted = self.interceptor.on_point(event)
        if not wanted:
            return True
        hold = Hold(self._loop, event, what)
        self.holds.append(hold)
        prefix = "watch." if wanted == FOR_WATCHER else ""  # no fault's: reports show a fault's holds only
        self.record(f"{prefix}hold", what=what, **event.fields())
        self.interceptor.on_hold(hold)
        forward = await hold.future
        settled = "fail" if isinstance(forward, Failed) else "release" if forward else "drop"
        self.record(f"{prefix}{settled}", what=what, held_s=round(time.time() - hold.since, 3), **event.fields(),
                    **({"answered": forward.status, "retry_after": forward.retry_after}
                       if isinstance(forward, Failed) else {}))
        return forward
