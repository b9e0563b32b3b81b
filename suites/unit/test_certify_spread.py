"""`certify --workers N`: which engine each worker gets, bad input, the bookkeeping of rows over workers,
the merged certificate, and the worker processes themselves with a stand-in job (no Docker): rows go to
whichever worker is free, a worker that dies leaves its row unknown, a SIGTERM stops every worker."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from harness.certify.certificate import write_certificate
from harness.certify.matrix import MATRIX, scenarios_for
from harness.certify.rows import MatrixRun, Row
from harness.certify.scheduler import Tally, Took, certify_spread, worker_engines
from harness.certify.worker import Finished, Worker
from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.faults.space import Observation
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
ROWS = {row.name: row for row in MATRIX}
QUICK_TXN = [row.name for row in scenarios_for("transactional", quick=True)]
TXN_SEEN = Observation.assumed("transactional", stateful=False)
A, B = "unix:///var/run/docker.sock", "unix:///run/eo-harness-engines/second/docker.sock"


def test_worker_i_runs_on_host_i_modulo_their_number() -> None:
    assert worker_engines(3, f"{A}, {B}", "unix:///default") == [A, B, A]
    assert worker_engines(2, "", "unix:///default") == ["unix:///default"] * 2
    assert worker_engines(1, "tcp://10.0.0.2:2375", "unix:///default") == ["tcp://10.0.0.2:2375"]


@pytest.mark.parametrize("workers, hosts, message", [
    (0, "", "--workers must be at least 1, not 0"),
    (2, f"{A},,{B}", "--docker-hosts has an empty entry"),
    (2, f"{A},", "--docker-hosts has an empty entry"),
    (2, "docker.sock", "--docker-hosts entry 'docker.sock' is not a Docker host URL"),
    (2, "unix:// spaced", "is not a Docker host URL"),
])
def test_bad_counts_and_hosts_are_bad_input(workers: int, hosts: str, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        worker_engines(workers, hosts, A)


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers must be at least 1"),
    (["--workers", "2", "--docker-hosts", "nope"], "entry 'nope' is not a Docker host URL"),
])
def test_the_command_says_it_in_one_line_with_status_2(args: list[str], message: str) -> None:
    run = subprocess.run([sys.executable, "-m", "harness", "certify", "--sink", "transactional", "--dry-run", *args],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert run.returncode == 2 and run.stdout == "", run.stderr
    assert run.stderr.strip().splitlines() == [f"harness: error: {run.stderr.split('error: ', 1)[1].strip()}"]
    assert message in run.stderr


def test_pytest_refuses_the_same_bad_hosts(tmp_path: Path) -> None:
    """`pytest --docker-hosts` dropped an empty entry quietly; it is bad input (exit 2), as in `certify`."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--docker-hosts", f"{A},,{B}", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert run.returncode == EXIT_BAD_INPUT, run.stdout + run.stderr
    assert "--docker-hosts has an empty entry" in run.stderr


def test_a_dry_run_says_how_rows_would_be_spread() -> None:
    run = subprocess.run([sys.executable, "-m", "harness", "certify", "--sink", "transactional", "--dry-run",
                          "--quick", "--workers", "3", "--docker-hosts", f"{A},{B}"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert run.returncode == 0, run.stderr
    assert f"w0 on {A}\n  w1 on {B}\n  w2 on {A}\n" in run.stdout and "takes the longest row left" in run.stdout


def finished(worker: int, name: str, outcome: str = "pass", **anomalies: int) -> Finished:
    return Finished(worker, Row(ROWS[name], outcome, anomalies, 60.0, f"{name}/index.html"), TXN_SEEN)


@pytest.fixture
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    return tmp_path / "reports"


def test_rows_come_back_linked_from_the_certificate_and_a_dead_workers_row_is_unknown(reports: Path) -> None:
    workers = [Worker(0, A, "run-w0"), Worker(1, B, "run-w1")]
    tally = Tally(workers, reports / "run")
    plan = [ROWS[name] for name in QUICK_TXN]
    assert tally.observed(plan[0]) == Observation()  # no baseline came back: nothing seen (plain, stateless)
    tally.took(Took(0, plan[0]))
    baseline = tally.finished(finished(0, "baseline"))
    assert (baseline.worker, baseline.engine, baseline.report) == ("w0", A, "../run-w0/baseline/index.html")
    assert tally.observed(plan[0]) == TXN_SEEN and tally.settled(plan[:1])
    tally.took(Took(1, plan[1]))
    tally.took(Took(0, plan[2]))
    assert tally.end(0, "ended (exit status 3)").outcome == "unknown"  # its running row, never a pass
    assert tally.end(1, "ended (exit status 1)").scenario == plan[1]
    assert tally.settled(plan)  # every worker ended: nothing more will come
    rows = tally.rows(plan)
    assert [r.outcome for r in rows] == ["pass", "unknown", "unknown"] + ["unknown"] * (len(plan) - 3)
    assert rows[2].error == f"worker w0 on {A} ended (exit status 3) while running it"
    assert rows[2].report == f"../run-w0/{plan[2].name}/index.html"
    assert rows[-1].error == "no worker was left to run it" and rows[-1].worker is None and rows[-1].report == ""


def test_a_worker_ending_idle_leaves_no_row(reports: Path) -> None:
    tally = Tally([Worker(0, A, "run-w0"), Worker(1, B, "run-w1")], reports / "run")
    tally.finished(finished(1, "baseline"))
    assert tally.end(0, "ended (exit status 0)") is None
    assert not tally.settled([ROWS["baseline"], ROWS["kill-sender-txn.commit"]])  # w1 can still run it


def test_the_merged_certificate_has_every_workers_rows_and_links_that_work(reports: Path, tmp_path: Path) -> None:
    workers = [Worker(0, A, "run-w0"), Worker(1, B, "run-w1")]
    out = tmp_path / "certificate"  # --out: elsewhere than the run's folder
    tally = Tally(workers, out)
    tally.finished(finished(0, "baseline"))
    tally.finished(finished(1, "kill-sender-txn.commit", "fail", duplicate=12))
    tally.took(Took(0, ROWS["kill-driver-txn.pre_commit"]))
    tally.end(0, "failed (NotReady)")
    plan = [ROWS[name] for name in ("baseline", "kill-sender-txn.commit", "kill-driver-txn.pre_commit")]
    for worker, name in ((0, "baseline"), (1, "kill-sender-txn.commit")):
        page = reports / f"run-w{worker}" / name / "index.html"
        page.parent.mkdir(parents=True)
        page.write_text("report")
    write_certificate(out, resolve_sink("transactional"), load_pipeline("passthrough"), TXN_SEEN, True, 1,
                      tally.rows(plan), 3)
    certificate = json.loads((out / "certificate.json").read_text())
    scenarios = {s["name"]: s for s in certificate["scenarios"]}
    assert list(scenarios) == [row.name for row in plan] and certificate["verdict"].startswith("not certified")
    assert [(s["worker"], s["engine"], s["outcome"]) for s in scenarios.values()] == [
        ("w0", A, "pass"), ("w1", B, "fail"), ("w0", A, "unknown")]
    for name in ("baseline", "kill-sender-txn.commit"):
        assert (out / scenarios[name]["report"]).read_text() == "report"
    junit = (out / "junit.xml").read_text()
    assert junit.count("<testcase") == 3 and 'failures="1" errors="1"' in junit
    page = (out / "index.html").read_text()
    assert f"href=\"../reports/run-w1/kill-sender-txn.commit/index.html\">report</a> (w1 on {B}, from " in page
    assert "<td>duplicate=12</td><td>60&nbsp;s</td>" in page  # each row's anomalies and time
    assert f"<td>{scenarios['kill-driver-txn.pre_commit']['error']}</td>" in page  # why a row is unknown
    assert "<h1>transactional with pipeline passthrough: not certified (" in page  # the pair is certified
    assert certificate["pipeline_source_sha256"] in page and "{" not in page.partition("versions: ")[2][:200]
    assert f"Kafka {certificate['versions']['kafka']}, Spark {certificate['versions']['spark']}" in page


@dataclass(frozen=True)
class StandInJob:
    """Rows that pass after `seconds` (`slow`: after 3 s), without Docker; the worker that takes `dies`
    ends after `seconds`, as in a crash. Marks in `marks`: a worker ready (its pid), a worker's session ended."""

    marks: str
    workers: int
    seconds: float = 0.2
    slow: str = ""
    dies: str = ""

    @contextmanager
    def session(self, worker: Worker) -> Iterator[partial]:
        (Path(self.marks) / f"{worker.name}.ready").write_text(str(os.getpid()))
        try:
            yield partial(self.run, worker)
        finally:
            (Path(self.marks) / f"{worker.name}.ended").touch()

    def run(self, worker: Worker, row: object) -> tuple[Row, str, bool]:
        if row.name == "baseline":  # every worker is up before the rest is handed out
            wait_for(lambda: len(list(Path(self.marks).glob("*.ready"))) == self.workers)
        time.sleep(3.0 if row.name == self.slow else self.seconds)
        if row.name == self.dies:
            os._exit(3)
        return Row(row, "pass", {}, self.seconds, f"{row.name}/index.html"), TXN_SEEN


def wait_for(condition: object, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def spread(tmp_path: Path, engines: list[str], **job: object) -> tuple[Path, str, list[Row]]:
    (tmp_path / "marks").mkdir()
    stand_in = StandInJob(str(tmp_path / "marks"), len(engines), **job)
    return certify_spread(stand_in, resolve_sink("transactional"), engines, True, tmp_path / "certificate")


def test_a_slow_row_holds_up_no_other(reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    slow = "delay-endtxn-txn.pre_commit-long"  # the longest expected: handed out first
    folder, seen, rows = spread(tmp_path, [A, B], slow=slow)
    assert (folder, seen.kind) == (tmp_path / "certificate", "transactional")
    assert [r.scenario.name for r in rows] == QUICK_TXN and {r.outcome for r in rows} == {"pass"}
    slow_worker = next(r.worker for r in rows if r.scenario.name == slow)
    by_slow_worker = {r.scenario.name for r in rows[1:] if r.worker == slow_worker}
    assert by_slow_worker == {slow}, "the free worker should have run every other row"
    assert {r.engine for r in rows} == {A, B}
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("[1/?] baseline") and len(printed) == len(QUICK_TXN)
    assert all(re.search(r"\(w[01](, beside [1-6])?\)$", line) for line in printed)
    assert sorted(p.name for p in (tmp_path / "marks").glob("*.ended")) == ["w0.ended", "w1.ended"]
    (index,) = reports.glob("*/index.html")  # the run's index, over both workers' folders
    assert f"Run {rows[0].report.split('/')[2].removesuffix('-w0').removesuffix('-w1')}" in index.read_text()


@dataclass
class StandInSizing:
    """One cluster at the start, `more` clusters for the rows; what it was asked, in order."""

    more: int
    asked: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def at_start(self, run_ids: list[str]) -> int:
        self.asked.append(("at_start", [run_id.rsplit("-", 1)[1] for run_id in run_ids]))
        return 1

    def after_baseline(self, run_id: str, running: int, wanted: Callable[[float], int]) -> int:
        self.asked.append(("after_baseline", run_id.rsplit("-", 1)[1], running, wanted(0.0), wanted(1.0)))
        self.notes.append(f"for the rows: {self.more}")
        return self.more


def test_the_quick_default_starts_one_cluster_then_those_the_plan_and_memory_allow(
        reports: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "marks").mkdir()
    sizing = StandInSizing(more=2)
    job = StandInJob(str(tmp_path / "marks"), 1, seconds=2.0)
    _, _, rows = certify_spread(job, resolve_sink("transactional"), [A, A, A], True, tmp_path / "certificate",
                                sizing=sizing)
    # the plan wants 3 clusters where the cores are not shared, 2 where one cluster's work takes them all (only
    # its rows' waits overlap then)
    assert sizing.asked == [("at_start", ["w0", "w1", "w2"]), ("after_baseline", "w0", 1, 3, 2)]
    assert {r.outcome for r in rows} == {"pass"} and {r.worker for r in rows[1:]} == {"w0", "w1"}
    assert rows[0].worker == "w0" and not (tmp_path / "marks" / "w2.ready").exists()  # two of three wanted
    assert "[harness] clusters for the rows: 2" in capsys.readouterr().err


def test_a_worker_that_dies_leaves_its_row_unknown_and_the_others_go_on(reports: Path, tmp_path: Path) -> None:
    dies = QUICK_TXN[2]
    _, _, rows = spread(tmp_path, [A, B], dies=dies)
    outcomes = {r.scenario.name: r.outcome for r in rows}
    assert outcomes.pop(dies) == "unknown" and set(outcomes.values()) == {"pass"}
    dead = next(r for r in rows if r.scenario.name == dies)
    assert dead.error.endswith("ended (exit status 3) while running it") and dead.worker


def test_when_every_worker_is_gone_every_row_left_is_unknown(reports: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    _, seen, rows = spread(tmp_path, [A], dies="baseline")
    assert seen.kind == "plain"  # as with one cluster: a baseline that showed nothing
    assert {r.outcome for r in rows} == {"unknown"} and rows[0].worker == "w0"
    assert all(r.error == "no worker was left to run it" for r in rows[1:])
    assert len(capsys.readouterr().out.splitlines()) == len(rows)  # every row printed, unknown ones too


# A terminal's Ctrl-C reaches a foreground process, whose SIGINT is Python's: restored first, since a run
# of these tests as a background job (`cmd &` in a script, nohup) inherits SIGINT ignored.
PARENT_SCRIPT = """
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path[:0] = [{repo!r}, {unit!r}]
from pathlib import Path
from harness.certify.scheduler import certify_spread
from harness.subject.code_spec import resolve_sink
from harness.interrupt import terminate_like_ctrl_c
from test_certify_spread import StandInJob
terminate_like_ctrl_c()
certify_spread(StandInJob({marks!r}, 2, seconds=600), resolve_sink("transactional"), [{a!r}, {b!r}], True, None)
"""


@pytest.mark.parametrize("stop", ["SIGTERM of the parent", "Ctrl-C in a terminal (SIGINT to every process)"])
def test_stopping_the_parent_stops_every_worker_and_waits(reports: Path, tmp_path: Path, stop: str) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = PARENT_SCRIPT.format(repo=str(REPO), unit=str(Path(__file__).parent), marks=str(marks), a=A, b=B)
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: len(list(marks.glob("*.ready"))) == 2 or parent.poll() is not None)
        time.sleep(1.0)  # the baseline handed out, a row running
        if stop.startswith("SIGTERM"):
            parent.send_signal(signal.SIGTERM)
        else:
            os.killpg(parent.pid, signal.SIGINT)
        _, stderr = parent.communicate(timeout=60)
    finally:
        parent.kill()
    assert parent.returncode != 0 and "KeyboardInterrupt" in stderr
    assert sorted(p.name for p in marks.glob("*.ended")) == ["w0.ended", "w1.ended"], stderr[-2000:]
    for ready in marks.glob("*.ready"):
        assert not Path(f"/proc/{ready.read_text()}").exists(), f"{ready.stem} still runs"


def test_an_unforeseen_error_in_one_row_makes_that_row_unknown_and_the_matrix_goes_on(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reports: Path) -> None:
    """A bug or a failure no one foresaw (not a HarnessError) costs its row, never the whole certification."""
    import harness.certify.rows

    class Crashing:
        def run(self) -> None:
            raise KeyError("no such container")

    class Stopped:
        run_id = "crashing-run"

    monkeypatch.setattr(harness.certify.rows, "row_scenario", lambda *args, **kwargs: Crashing())
    row, result = harness.certify.rows.run_row(Stopped(), MatrixRun("transactional"), ROWS["baseline"])  # type: ignore[arg-type]
    assert (row.outcome, result) == ("unknown", None)
    assert row.error == "unexpected KeyError: 'no such container'"
    assert "Traceback" in capsys.readouterr().err
    assert "KeyError" in (reports / "crashing-run" / "baseline" / "traceback.txt").read_text()
