"""`reordered`: within a key, output must follow the model's sequence (first occurrences, offset order)."""

from __future__ import annotations

from harness.checker.ledger import Ledger
from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class PerKeyOrderChecker:
    """For pipelines that promise per-key order; duplicates and losses are the other checker's business.

    A key lives in one output partition, and the reader returns each partition in offset order, so
    following the batches as they are read follows every key in order.
    """

    def __init__(self) -> None:
        self.reordered = Anomaly("reordered")
        self.last: dict[str, int] = {}  # key -> highest sequence number seen so far

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        last = self.last
        for n, want in enumerate(wants):
            if want is None:  # a duplicate or a foreigner
                continue
            key, seq = want
            previous = last.get(key, 0)
            if seq < previous:
                record = records[n]
                self.reordered.add({"id": identities[n], "key": key, "seq": seq, "after_seq": previous,
                                    "partition": record.partition(), "offset": record.offset()})
            else:
                last[key] = seq

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        return {"reordered": self.reordered} if self.reordered.count else {}
