"""What the gate reports and holds: who is on a connection, the points its requests reach, the holds,
and the interceptor that decides on them (the fault schedule)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

from harness.gate.http_points import HttpAnswer, HttpCommit
from harness.gate.pg_protocol import PgAnswer, PgCommit
from harness.gate.protocol import RequestInfo

HOLD_REQUEST = "request"
HOLD_RESPONSE = "response"


@dataclass(frozen=True)
class Peer:
    """Who is on the other end of a connection: a container and its role (driver, executors)."""

    container: str
    role: str
    address: str
    port: int = 0  # the client's source port: names the process that owns the connection
    broker: int = 1  # the node id of the broker the connection goes to (the relay's port it came in on)
    service: str = "kafka"  # what it connects to: kafka, or a service of relay.SERVICE_PORTS (postgres, s3)


@dataclass
class GateEvent:
    """A point reached by one request: a Kafka transaction or produce point, or a PostgreSQL commit (sent,
    or answered)."""

    point: str
    peer: Peer
    connection: int
    # a Kafka request; a PostgreSQL commit, or its answer; an HTTP commit (an S3 PUT, a catalog's), or its answer
    request: RequestInfo | PgCommit | PgAnswer | HttpCommit | HttpAnswer
    t: float = field(default_factory=time.time)

    @property
    def transactional_id(self) -> str | None:
        return self.request.transactional_id if isinstance(self.request, RequestInfo) else None

    @property
    def answered(self) -> bool:
        """A commit's answer (the server acted: PostgreSQL's, an HTTP server's), not the commit on its way in."""
        return isinstance(self.request, PgAnswer | HttpAnswer)

    def fields(self) -> dict:
        r = self.request
        head = {"point": self.point, "container": self.peer.container, "role": self.peer.role,
                "source": f"{self.peer.address}:{self.peer.port}", "connection": self.connection}
        if not isinstance(r, RequestInfo):
            return {**head, **r.fields()}
        return {**head, "broker": self.peer.broker,
                "api_version": r.api_version,
                "client_id": r.client_id, "transactional_id": r.transactional_id, "committed": r.committed,
                "producer_id": r.producer_id, "producer_epoch": r.producer_epoch,
                **({"transaction_timeout_ms": r.transaction_timeout_ms} if r.transaction_timeout_ms else {})}


@dataclass(frozen=True)
class Failed:
    """A held HTTP answer's replacement (a `fail` step): this status, and a Retry-After header when given."""

    status: int
    retry_after: int | None = None


class Hold:
    """A request or response held by the gate; `release` forwards it, `drop` cuts the connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop, event: GateEvent, what: str) -> None:
        self.loop = loop
        self.event = event
        self.what = what
        self.future: asyncio.Future[bool | Failed] = loop.create_future()  # forward, drop, or answer in its place
        self.since = time.time()

    def _settle(self, forward: bool | Failed) -> None:
        if not self.future.done():
            self.future.set_result(forward)

    def release(self) -> None:
        self.loop.call_soon_threadsafe(self._settle, True)

    def drop(self) -> None:
        self.loop.call_soon_threadsafe(self._settle, False)

    def fail(self, status: int, retry_after: int | None = None) -> None:
        """Answer a held HTTP answer with `status` in the server's place (harness.gate.http_proxy)."""
        self.loop.call_soon_threadsafe(self._settle, Failed(status, retry_after))

    @property
    def settled(self) -> bool:
        return self.future.done()


class Held(Protocol):
    """What the nemesis settles: one hold, or a hold with its retries."""

    what: str

    def release(self) -> None: ...

    def drop(self) -> None: ...


FOR_WATCHER = "watcher"  # on_point's word for a hold that is no fault: a table's commit held for its watcher


class Interceptor(Protocol):
    """Decides, per point reached, whether to hold (True, or FOR_WATCHER); is told of every hold. Called on
    the gate's loop: be quick."""

    def on_point(self, event: GateEvent) -> bool | str: ...

    def on_hold(self, hold: Hold) -> None: ...


class Observe:
    """The default interceptor: holds nothing."""

    def on_point(self, event: GateEvent) -> bool:
        return False

    def on_hold(self, hold: Hold) -> None:
        return None
