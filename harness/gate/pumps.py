"""What every protocol's pumps share (harness.gate.pg_proxy, harness.gate.http_proxy): a read that ends
quietly when the other side is gone, and the forwarding of what was gathered so far."""

from __future__ import annotations

import asyncio
from typing import Protocol

CHUNK = 65536


class _Forwards(Protocol):
    async def forward(self, writer: asyncio.StreamWriter, data: bytes) -> None: ...


async def read_chunk(reader: asyncio.StreamReader) -> bytes:
    """The next bytes, or none once the other side is gone."""
    try:
        return await reader.read(CHUNK)
    except ConnectionError:
        return b""


async def flush(gate: _Forwards, writer: asyncio.StreamWriter, gathered: bytearray) -> None:
    """Forward what was gathered so far, if anything."""
    if gathered:
        await gate.forward(writer, bytes(gathered))
        gathered.clear()
