"""Every expected identity exactly once and nothing else: `duplicate`, `lost`, `unexpected`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class ExactlyOnceChecker:
    """Compares the multiset of output identities with the expected set.

    Set operations do the bulk of the work in C; Python loops only over the anomalies themselves.
    """

    def check(
        self, expected: Mapping[str, Expected], output: list[Record], identities: list[str], counts: Counter[str]
    ) -> dict[str, Anomaly]:
        anomalies: dict[str, Anomaly] = {}
        observed = counts.keys()
        duplicated = [] if len(counts) == len(identities) else [i for i, c in counts.items() if c > 1]
        unexpected = observed - expected.keys()
        if duplicated or unexpected:
            where: dict[str, Record] = {}
            wanted = set(duplicated) | unexpected
            for identity, record in zip(identities, output, strict=True):
                if identity in wanted:
                    where.setdefault(identity, record)
            for identity in duplicated:
                anomalies.setdefault("duplicate", Anomaly("duplicate")).add(
                    {"id": identity, "count": counts[identity], **_at(where[identity])}, counts[identity] - 1
                )
            for identity in sorted(unexpected):
                anomalies.setdefault("unexpected", Anomaly("unexpected")).add(
                    {"id": identity, **_at(where[identity])}, counts[identity]
                )
        for identity in sorted(expected.keys() - observed):
            anomalies.setdefault("lost", Anomaly("lost")).add({"id": identity, "key": expected[identity].key})
        return anomalies


def _at(record: Record) -> dict:
    return {"partition": record.partition(), "offset": record.offset()}
