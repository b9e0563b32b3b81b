"""The gate's PostgreSQL connections: messages forwarded as they come, a commit (harness.gate.pg_protocol)
reported as the point `pg.commit` as it arrives and again as it is answered, and held there on the
interceptor's word. The server process that serves each connection (its BackendKeyData) is noted with the
connection's peer: the server sees the gate, not the writer, so a backend's role is known only here.

An SSLRequest or GSSENCRequest is answered `N` by the gate itself, so the session stays in plain text
the gate can read (every PostgreSQL client goes on without encryption unless told to require it).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from harness.gate.pg_protocol import GSSENC, NOT_SUPPORTED, SSL, Framer, PgConnection, ProtocolError, backend_pid
from harness.gate.points import HOLD_REQUEST, HOLD_RESPONSE, GateEvent, Peer
from harness.gate.pumps import flush, read_chunk

POINT = "pg.commit"
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Gate(Protocol):
    """What these pumps use of the gate (harness.gate.proxy.KafkaGate)."""

    backends: dict[int, Peer]  # a server process id -> the peer whose connection it serves

    def record(self, type: str, **fields: object) -> object: ...

    def refuse(self, peer: Peer, connection: int, direction: str, why: str) -> None: ...

    async def intercept(self, event: GateEvent, what: str) -> bool: ...

    async def forward(self, writer: asyncio.StreamWriter, data: bytes) -> None: ...


def pg_pumps(gate: _Gate, client: Stream, server: Stream, peer: Peer, connection: int) -> list[asyncio.Future]:
    """The two directions of one connection; either ending (a hold dropped, a side closed) ends both."""
    state = PgConnection()
    return [asyncio.ensure_future(_frontend(gate, client, server[1], peer, connection, state)),
            asyncio.ensure_future(_backend(gate, server[0], client[1], peer, connection, state))]


async def _frontend(gate: _Gate, client: Stream, server: asyncio.StreamWriter, peer: Peer, connection: int,
                    state: PgConnection) -> None:
    framer = Framer(frontend=True)
    while data := await read_chunk(client[0]):
        try:
            messages = framer.feed(data)
        except ProtocolError as error:
            gate.refuse(peer, connection, HOLD_REQUEST, str(error))
            return
        batch = bytearray()
        for message in messages:
            if message.kind in (SSL, GSSENC):
                client[1].write(NOT_SUPPORTED)  # plain text: the client sends its StartupMessage next
                continue
            commit = state.sent(message)
            if commit is not None:
                await flush(gate, server, batch)
                if not await gate.intercept(GateEvent(POINT, peer, connection, commit), HOLD_REQUEST):
                    return
            batch += message.raw
        await flush(gate, server, batch)


async def _backend(gate: _Gate, server: asyncio.StreamReader, client: asyncio.StreamWriter, peer: Peer,
                   connection: int, state: PgConnection) -> None:
    framer = Framer(frontend=False)
    while data := await read_chunk(server):
        try:
            messages = framer.feed(data)
        except ProtocolError as error:
            gate.refuse(peer, connection, HOLD_RESPONSE, str(error))
            return
        batch = bytearray()
        for message in messages:
            if (pid := backend_pid(message)) is not None:
                gate.backends[pid] = peer  # a process id of a backend gone may be reused: the latest is its
            answer = state.received(message)
            if answer is not None:
                await flush(gate, client, batch)
                if not await gate.intercept(GateEvent(POINT, peer, connection, answer), HOLD_RESPONSE):
                    return
            batch += message.raw
        await flush(gate, client, batch)
