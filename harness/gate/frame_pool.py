"""The bytes of Kafka frames the gate holds at once, from every connection together, as a Kafka broker
bounds its own (`queued.max.request.bytes`: a memory pool it stops reading sockets at when full). A frame
is read only once its size is taken from the pool, and its bytes go back when it has been forwarded: a
sink that opens many connections, each announcing a frame of the largest size and trickling its bytes,
makes them wait for room instead of filling the harness's memory."""

from __future__ import annotations

import asyncio

POOL_BYTES = 4 * 100 * 2**20  # four of the largest frames (protocol.MAX_FRAME): Spark's fetches fit many times


class FramePool:
    """A count of free bytes that frames take before they are read and give back once forwarded (on the
    gate's one loop: no lock; giving back is plain code, so a frame's bytes come back even where its reader
    is closed mid-frame)."""

    def __init__(self, capacity: int = POOL_BYTES) -> None:
        self.capacity = capacity
        self.free = capacity
        self._waiting: list[asyncio.Future[None]] = []

    async def take(self, size: int) -> None:
        """Wait until `size` bytes are free, then take them (a size over the capacity is a caller's error)."""
        assert size <= self.capacity, f"a frame of {size:,} bytes cannot fit a pool of {self.capacity:,}"
        while self.free < size:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
        self.free -= size

    def give(self, size: int) -> None:
        """Give back `size` bytes taken before, waking every frame that waits for room."""
        self.free += size
        for waiter in self._waiting:
            if not waiter.done():
                waiter.set_result(None)
        self._waiting.clear()
