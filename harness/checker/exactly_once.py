"""Every expected identity exactly once and nothing else: `duplicate`, `lost`, `unexpected`."""

from __future__ import annotations

from collections.abc import Mapping

from harness.checker.output import Output
from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class ExactlyOnceChecker:
    """Compares the multiset of output identities with the expected set.

    Set operations do the bulk of the work in C; Python loops only over the anomalies themselves.
    """

    def feed(self, expected: Mapping[str, Expected], records: list[Record], identities: list[str]) -> None:
        """Nothing to do per batch: the output's distinct identities are all this checker needs."""

    def anomalies(self, expected: Mapping[str, Expected], output: Output) -> dict[str, Anomaly]:
        if not output.duplicated and output.distinct == expected.keys():
            return {}
        anomalies: dict[str, Anomaly] = {}
        counts = output.counts
        duplicated = [i for i, c in counts.items() if c > 1] if output.duplicated else []
        unexpected = output.distinct.difference(expected)
        if duplicated or unexpected:
            where: dict[str, Record] = {}
            wanted = set(duplicated) | unexpected
            for identity, record in zip(output.identities, output.records, strict=True):
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
        for identity in sorted(expected.keys() - output.distinct):
            anomalies.setdefault("lost", Anomaly("lost")).add({"id": identity, "key": expected[identity].key})
        return anomalies


def _at(record: Record) -> dict:
    return {"partition": record.partition(), "offset": record.offset()}
