"""`reordered`: within a key, output must follow the model's sequence (first occurrences, offset order)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.checker.verdict import Anomaly, Expected
from harness.reader import OutputRecord


class PerKeyOrderChecker:
    """For pipelines that promise per-key order; duplicates and losses are the other checker's business."""

    def check(
        self, expected: Mapping[str, Expected], output: list[OutputRecord], identities: list[str]
    ) -> dict[str, Anomaly]:
        anomaly = Anomaly("reordered")
        last: dict[str, tuple[int, OutputRecord]] = {}
        seen: set[str] = set()
        ordered = sorted(range(len(output)), key=lambda n: (output[n].partition, output[n].offset))
        for n in ordered:
            identity = identities[n]
            want = expected.get(identity)
            if want is None or identity in seen:
                continue
            seen.add(identity)
            record = output[n]
            previous = last.get(want.key)
            if previous is not None and want.seq < previous[0]:
                anomaly.add(
                    {"id": identity, "key": want.key, "seq": want.seq, "after_seq": previous[0],
                     "partition": record.partition, "offset": record.offset}
                )
            if previous is None or want.seq > previous[0]:
                last[want.key] = (want.seq, record)
        return {"reordered": anomaly} if anomaly.count else {}
