"""The one judge: a scenario's outcome from the output's verdict and what its history shows the faults
and the input did. `run`, `certify`, `eo_scenario` and `pytest -m chaos --sink` all take their outcome
from here, so the same history gets the same outcome wherever it is judged.

A fault that never fired is the anomaly `vacuous` (a fail). A fault whose injection errored, or that
fired without any recorded effect, or after the point it was to land at (a table's commit: Spark's
own commit came first, harness.run.table_watch), live input that was not produced while the stream ran, a
speculation row where no task's copy wrote what its stopped first attempt did (as the gate saw it), or a
request of the system under test the gate could not read (its points may have passed unseen) leaves the
scenario `ineffective`: it did not try what it says, so it is never a pass, and any anomalies it found stay
listed but are not the outcome (an injection that failed half way may have caused them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.checker.verdict import FAIL, PASS, UNKNOWN, Anomaly, Verdict
from harness.errors import EXIT_ANOMALIES, EXIT_INFRASTRUCTURE, EXIT_OK

INEFFECTIVE = "ineffective"
OUTCOMES = (PASS, FAIL, INEFFECTIVE, UNKNOWN)
EXIT_STATUS = {PASS: EXIT_OK, FAIL: EXIT_ANOMALIES, INEFFECTIVE: EXIT_ANOMALIES, UNKNOWN: EXIT_INFRASTRUCTURE}


@dataclass(frozen=True)
class Judgement:
    """The outcome, the verdict it rests on (with `vacuous` added for faults that never fired), and why
    the outcome is not what the verdict alone says."""

    outcome: str
    verdict: Verdict
    reasons: tuple[str, ...] = ()

    def summary(self) -> str:
        text = self.verdict.summary()
        if self.outcome != self.verdict.outcome:
            text = f"{self.outcome.upper()}: {'; '.join(self.reasons)} (the output: {text})"
        return text


def judge(verdict: Verdict, events: Iterable[dict], faults: Sequence[str], unfired: Sequence[str] = (),
          live: bool = False, latency_measured: int | None = None, acked: int = 0,
          speculation: bool = False) -> Judgement:
    """The outcome of one scenario: `events` is its history (sends may be left out), `faults` the steps it
    scheduled, `unfired` those whose trigger was never reached; `live` input is checked to have been
    produced while the stream ran and, on a pass, its latency measured for every acknowledged record
    where the output carries its input's identity (`latency_measured` None: results that are not input
    records, an aggregation's or a state table's rows, have no per-record latency);
    with `speculation`, a task's copy must have written the records of its stopped first attempt, as the
    gate saw them (what Spark says of its tasks comes from the driver's JVM, which the sink can drive)."""
    errors, missed, unread, effects, first_batch, produced, copies, spark_said = [], [], [], 0, None, None, 0, 0
    unread_writes: list[str] = []
    for event in events:
        kind = event["type"]
        if kind == "fault.error":
            errors.append(f"{event.get('fault')}: {event.get('error')}")
        elif kind == "effect":
            effects += 1
        elif kind == "point.missed":
            missed.append(event.get("why", "a fault landed after its point"))
        elif kind == "batch.planned" and first_batch is None:
            first_batch = event["t"]
        elif kind == "input.produced":
            produced = event["t"]
        elif kind == "write.copied":
            copies += event.get("records", 1)
        elif kind == "speculation":
            spark_said += event.get("copies", 1)
        elif kind == "write.unread":
            unread_writes.append(f"{event.get('container')}: {event.get('why')}")
        elif kind in ("gate.parse_error", "gate.unread"):  # a request on the system under test's route unread
            unread.append(f"the gate could not read a request of the system under test (api key "
                          f"{event.get('api_key')}): {event.get('error') or event.get('why')}")
    if unfired and verdict.outcome != UNKNOWN:
        vacuous = Anomaly("vacuous")
        for step in unfired:
            vacuous.add({"fault": step, "reason": "fault never fired: its trigger point was not reached"})
        verdict = dataclasses.replace(verdict, outcome=FAIL, anomalies={**verdict.anomalies, "vacuous": vacuous})
    if verdict.outcome == UNKNOWN:
        return Judgement(UNKNOWN, verdict)
    if errors:
        return Judgement(INEFFECTIVE, verdict, tuple(f"fault injection failed: {e}" for e in errors))
    if verdict.outcome == FAIL:
        return Judgement(FAIL, verdict)
    reasons = list(missed) + list(dict.fromkeys(unread))
    if faults and not effects:
        reasons.append("the fault fired but no effect was recorded")
    if live and not (first_batch is not None and produced is not None and first_batch < produced):
        reasons.append("live input was not produced while the stream ran")
    if speculation and not copies:
        said = f"; Spark's event log says {spark_said} ran, but none wrote them" if spark_said else ""
        left = f" (writes not read: {'; '.join(unread_writes[:3])})" if unread_writes else ""
        reasons.append(f"no task ran twice: no executor wrote the records of one stopped mid-task{said}{left}")
    if reasons:
        return Judgement(INEFFECTIVE, verdict, tuple(reasons))
    if live and latency_measured is not None and latency_measured != acked:
        return Judgement(UNKNOWN, verdict, (f"live latency measured for {latency_measured} of {acked} acknowledged "
                                            "records: output and input could not be matched",))
    return Judgement(PASS, verdict)
