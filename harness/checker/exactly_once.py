"""Every expected identity exactly once and nothing else: `duplicate`, `lost`, `unexpected`."""

from __future__ import annotations

from harness.checker.ledger import Ledger
from harness.checker.verdict import Anomaly, Expected
from harness.client.records import Record


class ExactlyOnceChecker:
    """Reads the ledger: what is still remaining was lost, what came twice or from nowhere is extra."""

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        """Nothing to do per batch: the ledger checks identities off as they are read."""

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies: dict[str, Anomaly] = {}
        duplicates, unexpected = ledger.duplicates(), ledger.unexpected()
        if duplicates or unexpected:
            where: dict[str, Record] = {}
            for identity, record in zip(ledger.identities(), ledger.records, strict=True):
                if identity in ledger.extra:
                    where.setdefault(identity, record)
            for identity, count in duplicates.items():
                anomalies.setdefault("duplicate", Anomaly("duplicate")).add(
                    {"id": identity, "count": count, **_at(where[identity])}, count - 1
                )
            for identity in sorted(unexpected):
                anomalies.setdefault("unexpected", Anomaly("unexpected")).add(
                    {"id": identity, **_at(where[identity])}, unexpected[identity]
                )
        for identity in ledger.lost():
            anomalies.setdefault("lost", Anomaly("lost")).add({"id": identity, "key": ledger.remaining[identity].key})
        return anomalies


def _at(record: Record) -> dict:
    return {"partition": record.partition(), "offset": record.offset()}
