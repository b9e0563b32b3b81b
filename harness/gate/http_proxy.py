"""The gate's HTTP connections (an S3 server's, a catalog's): bytes forwarded both ways as they come, each
connection recorded with its peer, so that a partition of the sender's link cuts them as it does Kafka's."""

from __future__ import annotations

import asyncio
from typing import Protocol

from harness.gate.points import Peer

CHUNK = 65536

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Gate(Protocol):
    """What these pumps use of the gate (harness.gate.proxy.KafkaGate)."""

    def record(self, type: str, **fields: object) -> object: ...

    async def forward(self, writer: asyncio.StreamWriter, data: bytes) -> None: ...


def http_pumps(gate: _Gate, client: Stream, server: Stream, peer: Peer, connection: int) -> list[asyncio.Future]:
    """The two directions of one connection; either ending ends both."""
    gate.record("gate.connection", service=peer.service, container=peer.container, role=peer.role,
                connection=connection)
    return [asyncio.ensure_future(_pump(gate, client[0], server[1])),
            asyncio.ensure_future(_pump(gate, server[0], client[1]))]


async def _pump(gate: _Gate, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        try:
            data = await reader.read(CHUNK)
        except ConnectionError:
            return
        if not data:
            return
        await gate.forward(writer, data)
