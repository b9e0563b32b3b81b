"""Runs the checkers over one read and composes their anomalies into one verdict."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Protocol

from harness.checker.verdict import FAIL, NONE, PASS, UNKNOWN, Anomaly, Expected, Verdict, classify
from harness.reader import ReadResult, Record, collector_paused


class Checker(Protocol):
    """Names anomalies; `identities[n]` is the identity of `output[n]`, `counts` their multiset."""

    def check(
        self, expected: Mapping[str, Expected], output: list[Record], identities: list[str], counts: Counter[str]
    ) -> dict[str, Anomaly]: ...


def check(
    checkers: list[Checker],
    expected: Mapping[str, Expected],
    read: ReadResult,
    identity: Callable[[bytes], str],
    incomplete: str | None = None,
) -> Verdict:
    """Compose checkers; add `stuck` from the read and `incomplete` from the run; a crash is `unknown`."""
    anomalies: dict[str, Anomaly] = {}
    counts: Counter[str] = Counter()
    try:
        with collector_paused():
            identities = [identity(record.value()) for record in read.records]
            counts.update(identities)
            for checker in checkers:
                anomalies.update(checker.check(expected, read.records, identities, counts))
    except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
        return Verdict(UNKNOWN, NONE, anomalies, len(expected), len(read.records), 0, repr(error))
    if read.stuck:
        stuck = anomalies.setdefault("stuck", Anomaly("stuck"))
        for partition, (stable, high) in sorted(read.stuck.items()):
            stuck.add({"partition": partition, "last_stable_offset": stable, "high_watermark": high,
                       "open_transactions": read.open_transactions})
    if incomplete:
        anomalies.setdefault("incomplete", Anomaly("incomplete")).add({"reason": incomplete})
    outcome = FAIL if anomalies else PASS
    return Verdict(outcome, classify(anomalies), anomalies, len(expected), len(read.records), len(counts))
