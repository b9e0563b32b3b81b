"""`reordered`: within a key, output must follow the model's sequence (first occurrences, offset order)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class PerKeyOrderChecker:
    """For pipelines that promise per-key order; duplicates and losses are the other checker's business.

    A key lives in one output partition, and the reader returns each partition in offset order.
    """

    def check(
        self, expected: Mapping[str, Expected], output: list[Record], identities: list[str], counts: Counter[str]
    ) -> dict[str, Anomaly]:
        anomaly = Anomaly("reordered")
        last: dict[str, int] = {}
        if len(counts) != len(identities):  # keep first occurrences only
            first: dict[str, int] = {}
            for n, identity in enumerate(identities):
                first.setdefault(identity, n)
            positions = sorted(first.values())
        else:
            positions = range(len(identities))
        wants = [expected.get(identities[n]) for n in positions]
        for n, want in zip(positions, wants, strict=True):
            if want is None:
                continue
            key, seq = want
            previous = last.get(key, 0)
            if seq < previous:
                record = output[n]
                anomaly.add({"id": identities[n], "key": key, "seq": seq, "after_seq": previous,
                             "partition": record.partition(), "offset": record.offset()})
            else:
                last[key] = seq
        return {"reordered": anomaly} if anomaly.count else {}
