"""The output as the checkers see it, built batch by batch while the reader is still fetching."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cached_property

from harness.reader import Record


class Output:
    """Every record read, its identity, and the distinct identities.

    Records arrive in batches as the consumer hands them over; librdkafka fetches the next batch
    in its own threads meanwhile, so the work done here per batch mostly overlaps the read.
    """

    def __init__(self, identity: Callable[[bytes], str]) -> None:
        self.identity = identity
        self.records: list[Record] = []
        self.identities: list[str] = []
        self.distinct: set[str] = set()

    def add(self, batch: list[Record]) -> tuple[list[Record], list[str]]:
        """Take one batch; return its first occurrences (records and identities), in order."""
        identities = [self.identity(record.value()) for record in batch]
        self.records.extend(batch)
        self.identities.extend(identities)
        fresh = set(identities)
        if len(fresh) == len(identities) and self.distinct.isdisjoint(fresh):
            self.distinct |= fresh
            return batch, identities
        firsts: list[int] = []
        for n, identity in enumerate(identities):
            if identity not in self.distinct:
                self.distinct.add(identity)
                firsts.append(n)
        return [batch[n] for n in firsts], [identities[n] for n in firsts]

    @property
    def duplicated(self) -> bool:
        return len(self.distinct) != len(self.identities)

    @cached_property
    def counts(self) -> Counter[str]:
        """The multiset of identities; built only when an anomaly needs it (it costs a pass)."""
        return Counter(self.identities)
