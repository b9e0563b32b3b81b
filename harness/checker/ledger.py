"""The expected identities, checked off one by one as the output is read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from itertools import repeat

from harness.checker.verdict import Expected
from harness.reader import Record


class Ledger:
    """What is still expected, what came more than once or was never expected, and every record read.

    Checking off is one dictionary pop per record, done in C through `map`, batch by batch on the
    reader's batch thread while the consumer waits for the broker; only anomalies cost Python loops.
    """

    def __init__(self, expected: Mapping[str, Expected], identity: Callable[[bytes], str]) -> None:
        self.expected = expected
        self.identity = identity
        self.remaining: dict[str, Expected] = dict(expected)
        self.extra: Counter[str] = Counter()  # identities read when not (or no longer) remaining
        self.records: list[Record] = []
        self.identities: list[str] = []

    def add(self, batch: list[Record]) -> tuple[list[str], list[Expected | None]]:
        """Check a batch off; return its identities and, for first occurrences, what the model expects."""
        identities = [self.identity(record.value()) for record in batch]
        wants: list[Expected | None] = list(map(self.remaining.pop, identities, repeat(None)))
        if None in wants:
            self.extra.update(identity for identity, want in zip(identities, wants, strict=True) if want is None)
        self.records.extend(batch)
        self.identities.extend(identities)
        return identities, wants

    def duplicates(self) -> dict[str, int]:
        """Expected identities read more than once, with how many times."""
        return {i: n + 1 for i, n in self.extra.items() if i in self.expected}

    def unexpected(self) -> dict[str, int]:
        """Identities the model never expected, with how many times they were read."""
        return {i: n for i, n in self.extra.items() if i not in self.expected}

    @property
    def distinct(self) -> int:
        return len(self.expected) - len(self.remaining) + len(self.unexpected())
