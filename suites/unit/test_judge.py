"""The one judge: the same history gets the same outcome through `run` (its exit status), `certify` (its
rows, certificate and exit status) and the pytest plugin (`eo_scenario`'s result, the --sink matrix's
check), including a fault whose injection errored and a fault that fired without effect: never a pass."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import harness.certify.certification
import harness.certify.rows
import harness.cli.run
from harness.checker.judge import INEFFECTIVE, judge
from harness.checker.verdict import FAIL, PASS, UNKNOWN, Anomaly, Verdict
from harness.cli import main
from harness.client.reader import ReadResult
from harness.client.workload import ACKED, SendLog
from harness.history import History
from harness.run.scenario_result import ScenarioResult, judged
from harness.sink_matrix import check_row

pytestmark = pytest.mark.unit
FAULT = "kill:executor@batch.planned:2"
FIRED = [{"type": "point", "point": "txn.commit", "role": "executors"}, {"type": "trigger", "step": FAULT},
         {"type": "batch.planned", "batch": 2, "t": 1.0}]
EFFECT = {"type": "effect", "fault": FAULT, "effect": "SIGKILL to pid 7 in worker1"}


def output(outcome: str = PASS, **anomalies: int) -> Verdict:
    found = {name: Anomaly(name, count) for name, count in anomalies.items()}
    return Verdict(outcome, "exactly-once" if outcome == PASS else "at-least-once", found, 10, 10, 10)


# (the case, the output's verdict, the history, faults never fired, the outcome every front end must give)
CASES = [
    pytest.param(output(), [*FIRED, EFFECT], [], PASS, id="fired-with-effect"),
    pytest.param(output(), [*FIRED, EFFECT, {"type": "fault.error", "fault": FAULT, "error": "heal failed"}], [],
                 INEFFECTIVE, id="injection-errored"),
    pytest.param(output(), FIRED, [], INEFFECTIVE, id="no-effect"),
    pytest.param(output(), [], [FAULT], FAIL, id="never-fired"),
    pytest.param(output(FAIL, duplicate=3), [*FIRED, EFFECT], [], FAIL, id="duplicates"),
    pytest.param(output(UNKNOWN, incomplete=1), [*FIRED, EFFECT], [], UNKNOWN, id="incomplete"),
]
EXIT = {PASS: 0, FAIL: 1, INEFFECTIVE: 1, UNKNOWN: 3}


def judged_result(folder: Path, verdict: Verdict, events: list[dict], unfired: list[str]) -> ScenarioResult:
    """A finished scenario with this history, judged as Scenario.run judges it."""
    folder.mkdir(parents=True)
    history = History(folder / "history.jsonl")
    for event in events:
        history.record(event["type"], **{k: v for k, v in event.items() if k != "type"})
    history.close()
    result = ScenarioResult(folder.name, verdict, SendLog(bytearray([ACKED] * 10)), ReadResult([], {}, {}), [1, 2],
                            [1, 2], report_dir=folder, brokers=3)  # three: every class of the space applies
    judged(result, [FAULT], unfired)
    return result


@dataclass
class Stand:
    """A stand-in for the session, its cluster and its scenarios: every scenario gives the prepared result."""

    run_id: str
    result: ScenarioResult
    report_dir: Path

    @property
    def cluster(self) -> Stand:
        return self

    @property
    def folder(self) -> Path:
        return self.report_dir.parent

    def run(self) -> ScenarioResult:
        return self.result

    def scenario(self, *args: object, **kwargs: object) -> Stand:
        return self


@pytest.fixture
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    return tmp_path / "reports"


@pytest.mark.parametrize("verdict, events, unfired, outcome", CASES)
def test_one_history_one_outcome_through_run_certify_and_the_plugin(
        reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        verdict: Verdict, events: list[dict], unfired: list[str], outcome: str) -> None:
    result = judged_result(reports / "run" / "scenario", verdict, events, unfired)
    assert result.outcome == outcome, result.summary()
    assert json.loads((result.report_dir / "history.jsonl").read_text().splitlines()[-1])["outcome"] == outcome
    stand = Stand("run", result, result.report_dir)

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[Stand]:
        yield stand

    monkeypatch.setattr(harness.cli.run, "session", session)
    monkeypatch.setattr(harness.certify.rows, "session", session)
    monkeypatch.setattr(harness.certify.rows, "row_scenario", lambda *args, **kwargs: stand)

    # run
    assert main(["run", "--sink", "transactional", "--fault", FAULT]) == EXIT[outcome]
    assert outcome in capsys.readouterr().out

    # certify (on one cluster, in this process): every row of the matrix gives this history
    certificate = tmp_path / "certificate"
    assert main(["certify", "--sink", "transactional", "--workers", "1", "--out", str(certificate)]) == EXIT[outcome]
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("transactional with pipeline passthrough: "), last  # the pair is what is certified
    written = json.loads((certificate / "certificate.json").read_text())
    assert {row["outcome"] for row in written["scenarios"]} == {outcome}
    assert written["certified"] == (outcome == PASS) == written["verdict"].startswith("certified exactly-once")
    assert {c["outcome"] for c in written["classes"]} == {outcome}  # every class tried, by a row so judged

    # the plugin: eo_scenario's result and the --sink matrix's check
    assert result.exactly_once == (outcome == PASS)
    if outcome == PASS:
        check_row(result, PASS)
    else:
        with pytest.raises(AssertionError):
            check_row(result, PASS)


def test_a_fail_outweighs_a_fault_without_effect_and_an_injection_error_outweighs_a_fail() -> None:
    """Anomalies from a fault that fired cleanly are the sink's; after an injection that failed they may
    be the harness's, so the row is ineffective (never a pass either way)."""
    assert judge(output(FAIL, lost=2), FIRED, [FAULT]).outcome == FAIL
    errored = [*FIRED, {"type": "fault.error", "fault": FAULT, "error": "no such container"}]
    judgement = judge(output(FAIL, lost=2), errored, [FAULT])
    assert judgement.outcome == INEFFECTIVE and "no such container" in judgement.summary()


@pytest.mark.parametrize("unread", [
    {"type": "gate.parse_error", "api_key": 26, "error": "ValueError('truncated')"},
    {"type": "gate.unread", "api_key": 0, "why": "a Produce that names topics by id"},
], ids=["parse-error", "unread"])
def test_a_request_the_gate_could_not_read_makes_a_passing_row_ineffective(unread: dict) -> None:
    """Its points may have passed the gate unseen: the row did not try what it says."""
    judgement = judge(output(), [*FIRED, unread], [FAULT])
    assert judgement.outcome == INEFFECTIVE and "the gate could not read a request" in judgement.summary()
    assert judge(output(FAIL, lost=2), [*FIRED, unread], [FAULT]).outcome == FAIL


def test_live_input_must_be_produced_while_the_stream_ran() -> None:
    before = [{"type": "input.produced", "t": 1.0}, {"type": "batch.planned", "t": 2.0}]
    during = [{"type": "batch.planned", "t": 1.0}, {"type": "input.produced", "t": 2.0}]
    assert judge(output(), before, [], live=True, latency_measured=10, acked=10).outcome == INEFFECTIVE
    assert judge(output(), during, [], live=True, latency_measured=10, acked=10).outcome == PASS
    assert judge(output(), during, [], live=True, latency_measured=9, acked=10).outcome == UNKNOWN


def test_live_results_that_are_not_input_records_need_no_latency() -> None:
    """An aggregation's updates or a state table's rows carry no input's identity: no per-record latency
    to measure (None), the row judged on its output and on its input having been live."""
    during = [{"type": "batch.planned", "t": 1.0}, {"type": "input.produced", "t": 2.0}]
    before = [{"type": "input.produced", "t": 1.0}, {"type": "batch.planned", "t": 2.0}]
    assert judge(output(), during, [], live=True, latency_measured=None, acked=10).outcome == PASS
    assert judge(output(), before, [], live=True, latency_measured=None, acked=10).outcome == INEFFECTIVE


def test_an_unforeseen_error_is_one_line_and_status_3_with_the_traceback_kept(
        reports: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Not Python's status 1, which reads as "anomalies found"."""
    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[Stand]:
        raise KeyError("no such network")
        yield

    monkeypatch.setattr(harness.cli.run, "session", session)
    assert main(["run", "--sink", "transactional"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("harness: unexpected error: KeyError"), err
    kept = Path(err.rpartition("(traceback: ")[2].rstrip(")"))
    assert kept.is_relative_to(reports) and "no such network" in kept.read_text()


def test_a_speculation_row_where_no_task_ran_twice_is_ineffective() -> None:
    """The copy's evidence is the gate's (another container wrote the stopped attempt's records): what
    Spark's event log says, which the sink can forge through the driver's JVM, is not enough alone."""
    copied = [*FIRED, EFFECT, {"type": "write.copied", "attempt": "spark-worker-1", "copy": "spark-worker-2",
                               "records": 250}]
    assert judge(output(), copied, [FAULT], speculation=True).outcome == PASS
    judgement = judge(output(), [*FIRED, EFFECT], [FAULT], speculation=True)
    assert judgement.outcome == INEFFECTIVE and "no task ran twice" in judgement.summary()
    said = [*FIRED, EFFECT, {"type": "speculation", "copies": 1, "first": "Marking task 3 ... as speculatable"},
            {"type": "write.unread", "container": "spark-worker-2", "why": "records compressed with lz4: not read"}]
    judgement = judge(output(), said, [FAULT], speculation=True)
    assert judgement.outcome == INEFFECTIVE, judgement.summary()
    assert "event log says 1 ran, but none wrote them" in judgement.summary()
    assert "spark-worker-2: records compressed with lz4" in judgement.summary()
