"""Runs the checkers over one read and composes their anomalies into one verdict.

The checkers see the output as the reader fetches it (`OutputCheck.feed` is the reader's batch
callback, run on a thread of its own), so that their work fills the read's waits for the broker;
what is left runs once at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Protocol

from harness.checker.ledger import Ledger
from harness.checker.verdict import FAIL, NONE, PASS, UNKNOWN, Anomaly, Expected, Verdict, classify
from harness.client.reader import ReadResult, collector_paused
from harness.client.records import Record


class Checker(Protocol):
    """Names anomalies in one output (a checker is made per output).

    `feed` sees each batch in read order: its records, their identities and, for each first
    occurrence of an expected identity, what the model expects of it (else None). `anomalies` runs
    once, at the end, with the ledger. A checker that follows order within a partition has an `ordered`
    attribute, which the check sets False for an output whose partitions are not sequences (a table).
    """

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None: ...

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]: ...


class OutputCheck:
    """The exact oracle: composed checkers over one output; a checker that crashes makes it `unknown`.

    Records the output cannot hold are the ledger's `unreadable`, never a crash: the checkers see only
    readable records. `required` narrows `lost` to results of input the pipeline consumed (see Ledger);
    `identities` is the pipeline's batch form of `identity`, when it has one; `ordered`: whether the
    output's partitions are sequences (a Kafka partition) or not (a table's files: no order is judged).
    """

    def __init__(
        self,
        checkers: list[Checker],
        expected: Mapping[str, Expected],
        identity: Callable[[bytes], str],
        required: Collection[str] | None = None,
        identities: Callable[[list[bytes]], list[str]] | None = None,
        ordered: bool = True,
    ) -> None:
        if not ordered:
            for checker in checkers:
                if hasattr(checker, "ordered"):
                    checker.ordered = False  # type: ignore[attr-defined]
        self.checkers = checkers
        self.ledger = Ledger(expected, identity, required, identities)
        self.error: Exception | None = None

    def feed(self, batch: list[Record]) -> None:
        if self.error is not None:
            return
        try:
            readable, identities, wants = self.ledger.add(batch)
            for checker in self.checkers:
                checker.feed(readable, identities, wants)
        except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
            self.error = error

    def verdict(self, read: ReadResult, incomplete: Mapping[str, object] | None = None) -> Verdict:
        """Compose the checkers' anomalies, add `unreadable` from the ledger, and close the verdict."""
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
            return Verdict(UNKNOWN, NONE, anomalies, ledger.required_count, len(ledger.records), 0, repr(self.error))
        if ledger.unreadable.count:
            anomalies["unreadable"] = ledger.unreadable
        changelog = any(getattr(checker, "changelog", False) for checker in self.checkers)
        unreached = ledger.unreached() if ledger.required is not None else None
        return close_verdict(anomalies, read, incomplete, changelog, ledger.required_count, len(ledger.records),
                             ledger.distinct, unreached)


def close_verdict(
    anomalies: dict[str, Anomaly],
    read: ReadResult,
    incomplete: Mapping[str, object] | None,
    changelog: bool,
    expected: int,
    observed: int,
    distinct: int,
    unreached: int | None = None,
) -> Verdict:
    """Add `stuck` from the read and `incomplete` (why, the progress made, the results not reached) from
    the run, and name the outcome and guarantee. An incomplete run fails on the evidence it holds; with
    none it is `unknown`, never a pass and never a loss of the input it did not reach. A run stopped by
    a query that failed for good (`crash_loop`, `query_failed`) fails with that anomaly, the query's
    failures its examples."""
    if read.stuck:
        stuck = anomalies.setdefault("stuck", Anomaly("stuck"))
        for partition, (stable, high) in sorted(read.stuck.items()):
            stuck.add({"partition": partition, "last_stable_offset": stable, "high_watermark": high,
                       "open_transactions": [t for t in read.open_transactions
                                             if partition in t.get("partitions", [partition])]})
    stopped = incomplete.get("anomaly") if incomplete else None
    if incomplete and stopped:  # the query failed for good (harness.run.driver_supervisor): the sink's failure
        failures = list(incomplete.get("failures", ()))
        anomalies[stopped] = Anomaly(stopped)
        for n, failure in enumerate(failures):
            anomalies[stopped].add({**failure, **({"explanation": incomplete["explanation"]}
                                                  if n == 0 and incomplete.get("explanation") else {})})
        incomplete = {k: v for k, v in incomplete.items() if k not in ("anomaly", "failures", "explanation")}
    outcome, error = (FAIL if anomalies else PASS), None
    if incomplete:
        anomalies["incomplete"] = Anomaly("incomplete")
        anomalies["incomplete"].add({**incomplete, **({} if unreached is None else {"results_not_reached": unreached})})
        if outcome == PASS:
            outcome, error = UNKNOWN, f"incomplete: {incomplete.get('reason')}"
    return Verdict(outcome, classify(anomalies, changelog), anomalies, expected, observed, distinct, error)

def check(
    checkers: list[Checker],
    expected: Mapping[str, Expected],
    read: ReadResult,
    identity: Callable[[bytes], str],
    incomplete: Mapping[str, object] | None = None,
    required: Collection[str] | None = None,
    ordered: bool = True,
) -> Verdict:
    """Check a read that is already complete (crafted outputs, tests): one batch, then the verdict."""
    output_check = OutputCheck(checkers, expected, identity, required, ordered=ordered)
    with collector_paused():
        output_check.feed(read.records)
    return output_check.verdict(read, incomplete)
