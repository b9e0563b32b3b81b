"""Runs the checkers over one read and composes their anomalies into one verdict.

The checkers see the output as the reader fetches it (`OutputCheck.feed` is the reader's batch
callback, run on a thread of its own), so that their work fills the read's waits for the broker;
what is left runs once at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from harness.checker.ledger import Ledger
from harness.checker.verdict import FAIL, NONE, PASS, UNKNOWN, Anomaly, Expected, Verdict, classify
from harness.reader import ReadResult, Record, collector_paused


class Checker(Protocol):
    """Names anomalies in one output (a checker is made per output).

    `feed` sees each batch in read order: its records, their identities and, for each first
    occurrence of an expected identity, what the model expects of it (else None). `anomalies` runs
    once, at the end, with the ledger.
    """

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None: ...

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]: ...


class OutputCheck:
    """Composed checkers over one output; a checker that crashes makes the verdict `unknown`."""

    def __init__(
        self, checkers: list[Checker], expected: Mapping[str, Expected], identity: Callable[[bytes], str]
    ) -> None:
        self.checkers = checkers
        self.ledger = Ledger(expected, identity)
        self.error: Exception | None = None

    def feed(self, batch: list[Record]) -> None:
        if self.error is not None:
            return
        try:
            identities, wants = self.ledger.add(batch)
            for checker in self.checkers:
                checker.feed(batch, identities, wants)
        except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
            self.error = error

    def verdict(self, read: ReadResult, incomplete: str | None = None) -> Verdict:
        """Compose the checkers' anomalies; add `stuck` from the read and `incomplete` from the run."""
        anomalies: dict[str, Anomaly] = {}
        ledger = self.ledger
        if self.error is None:
            try:
                with collector_paused():
                    for checker in self.checkers:
                        anomalies.update(checker.anomalies(ledger))
            except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
                self.error = error
        if self.error is not None:
            return Verdict(UNKNOWN, NONE, anomalies, len(ledger.expected), len(ledger.records), 0, repr(self.error))
        if read.stuck:
            stuck = anomalies.setdefault("stuck", Anomaly("stuck"))
            for partition, (stable, high) in sorted(read.stuck.items()):
                stuck.add({"partition": partition, "last_stable_offset": stable, "high_watermark": high,
                           "open_transactions": read.open_transactions})
        if incomplete:
            anomalies.setdefault("incomplete", Anomaly("incomplete")).add({"reason": incomplete})
        outcome = FAIL if anomalies else PASS
        return Verdict(outcome, classify(anomalies), anomalies, len(ledger.expected), len(ledger.records),
                       ledger.distinct)


def check(
    checkers: list[Checker],
    expected: Mapping[str, Expected],
    read: ReadResult,
    identity: Callable[[bytes], str],
    incomplete: str | None = None,
) -> Verdict:
    """Check a read that is already complete (crafted outputs, tests): one batch, then the verdict."""
    output_check = OutputCheck(checkers, expected, identity)
    with collector_paused():
        output_check.feed(read.records)
    return output_check.verdict(read, incomplete)
