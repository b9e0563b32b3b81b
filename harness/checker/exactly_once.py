"""Every expected identity exactly once and nothing else: `duplicate`, `lost`, `unexpected`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class ExactlyOnceChecker:
    """Compares the multiset of output identities with the expected set."""

    def check(
        self, expected: Mapping[str, Expected], output: list[Record], identities: list[str]
    ) -> dict[str, Anomaly]:
        anomalies: dict[str, Anomaly] = {}
        counts = Counter(identities)
        where: dict[str, Record] = {}
        if len(counts) != len(identities) or not counts.keys() <= expected.keys():
            for identity, record in zip(identities, output, strict=True):
                if counts[identity] > 1 or identity not in expected:
                    where.setdefault(identity, record)
        for identity, count in counts.items():
            if count > 1:
                anomalies.setdefault("duplicate", Anomaly("duplicate")).add(
                    {"id": identity, "count": count, **_at(where[identity])}, count - 1
                )
            if identity not in expected:
                anomalies.setdefault("unexpected", Anomaly("unexpected")).add(
                    {"id": identity, **_at(where[identity])}, count
                )
        for identity in sorted(expected.keys() - counts.keys()):
            anomalies.setdefault("lost", Anomaly("lost")).add({"id": identity, "key": expected[identity].key})
        return anomalies


def _at(record: Record) -> dict:
    return {"partition": record.partition(), "offset": record.offset()}
