"""`reordered`: within a key, output must follow the model's sequence (first occurrences, offset order)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class PerKeyOrderChecker:
    """For pipelines that promise per-key order; duplicates and losses are the other checker's business.

    A key lives in one output partition, and the reader returns each partition in offset order.
    """

    def check(
        self, expected: Mapping[str, Expected], output: list[Record], identities: list[str]
    ) -> dict[str, Anomaly]:
        anomaly = Anomaly("reordered")
        last: dict[str, int] = {}
        seen: set[str] = set()
        want_of = expected.get
        for n, identity in enumerate(identities):
            want = want_of(identity)
            if want is None or identity in seen:
                continue
            seen.add(identity)
            key, seq = want
            previous = last.get(key, 0)
            if seq < previous:
                record = output[n]
                anomaly.add({"id": identity, "key": key, "seq": seq, "after_seq": previous,
                             "partition": record.partition(), "offset": record.offset()})
            else:
                last[key] = seq
        return {"reordered": anomaly} if anomaly.count else {}
