"""A task's copy, seen on the wire: two executors' containers writing the same records while one of them is
stopped (its write held at the gate, or its worker paused).

A speculation row is effective only if Spark ran a copy of a task while the first attempt still lived. What
Spark says of its tasks (its event log, its listener bus, its REST API) comes from the driver's JVM, which the
sink drives through PySpark's gateway, so it can be forged. What executors send through the gate cannot be
said without being done: a copy counted here is another container writing the stopped attempt's records,
before or after them, while that attempt was stopped, which is the effect the row is for, whoever started it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

# Records remembered at most (16 bytes each, with a container's name): a run writes a few hundred thousand.
MAX_REMEMBERED = 2_000_000


class CopiedWrites:
    """Fingerprints of the records written (harness.gate.record_batches), by the container that wrote each
    first, and those written while a container was stopped, by who wrote them."""

    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self.limit = limit
        self.full = False  # past `limit`: later records are not remembered
        self.unread: set[tuple[str, str]] = set()  # (container, why) of writes whose records could not be read
        self._first: dict[bytes, str] = {}
        self._during: dict[str, dict[bytes, str]] = {}  # a stopped container -> records others wrote meanwhile

    def written(self, container: str, prints: Iterable[bytes], stopped: Iterable[str]) -> Counter[tuple[str, str]]:
        """`container` wrote these records while the `stopped` containers were: how many were copies, by
        (the stopped attempt's container, the copy's)."""
        prints = list(prints)
        copies: Counter[tuple[str, str]] = Counter()
        for other in set(stopped) - {container}:
            during = self._during.setdefault(other, {})
            for mark in prints:
                if self._first.get(mark) == other:  # the stopped attempt wrote it before: this is its copy
                    copies[(other, container)] += 1
                elif len(during) < self.limit:
                    during.setdefault(mark, container)
        during = self._during.get(container, {})
        for mark in prints:  # the stopped attempt, going on, writes what its copy wrote meanwhile
            copier = during.pop(mark, None)
            if copier is not None:
                copies[(container, copier)] += 1
        for mark in prints:
            if len(self._first) >= self.limit:
                self.full = True
                break
            self._first.setdefault(mark, container)
        return copies
