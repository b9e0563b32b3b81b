"""Driver replacements: two kills at once take turns, so the second kills the driver the first started
(at once, both killed the same container and the second's removal failed with a conflict). A query that
fails on its own is restarted as a deployment's supervisor would, until restarts run out (a crash loop)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness.checker.compose import close_verdict
from harness.checker.verdict import FAIL, UNKNOWN
from harness.client.reader import ReadResult
from harness.errors import BadInput
from harness.history import History, read_history
from harness.run.driver_supervisor import CRASH_LOOP, QUERY_FAILED, DriverSupervisor, backoff_s
from harness.run.event_log import TaskEvents, described
from harness.run.query_failure import query_failure

pytestmark = pytest.mark.unit

class StandInDriver:
    """A driver that starts at once and keeps no log."""

    def __init__(self, number: int) -> None:
        self.alias = f"driver-{number}"
        self.event_log = f"/checkpoints/.events/{self.alias}"

    def start(self) -> None:
        time.sleep(0.05)

    def save_log(self, folder: Path, filename: str) -> None:
        pass

    def log_text(self) -> str:
        return ""

    def started_at(self) -> float | None:
        return None

    def session_ready_at(self) -> float | None:
        return None


class StandInCluster:
    files = None  # no relay: no event log is read

    def __init__(self) -> None:
        self.started: list[StandInDriver] = []
        self.removed: list[str] = []

    def new_driver(self, name: str, args: list[str], *_: object) -> StandInDriver:
        self.started.append(StandInDriver(len(self.started)))
        return self.started[-1]

    def remove_driver(self, driver: StandInDriver) -> None:
        assert driver.alias not in self.removed, "removed twice"
        self.removed.append(driver.alias)


def test_two_kills_at_once_take_turns_and_kill_one_driver_each(tmp_path: Path) -> None:
    cluster = StandInCluster()
    history = History(tmp_path / "history.jsonl")
    supervisor = DriverSupervisor(cluster, "d", [], history, tmp_path, "p", "s")  # type: ignore[arg-type]
    supervisor.start()
    killed: list[str] = []

    def kill() -> None:
        killed.append(supervisor.current().alias)
        time.sleep(0.1)

    threads = [threading.Thread(target=supervisor.replace, args=(kill,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history.close()
    assert killed == ["driver-0", "driver-1"]
    assert cluster.removed == ["driver-0", "driver-1"]
    assert supervisor.current().alias == "driver-2" and supervisor.restarts == 2


class Exiting(StandInDriver):
    """A driver whose query fails (or not) the moment the harness looks at it."""

    log = ('HARNESS-QUERY-STARTED id=q\nHARNESS-QUERY-FAILED {"message": "[STREAM_FAILED] Query [id = q] terminated '
           'with exception: Traceback (most recent call last):\\n  File \\"sink.py\\", line 9, in write\\n'
           '    producer.commit_transaction(60)\\nconfluent_kafka.KafkaException: KafkaError{code=_FENCED}", '
           '"last_batch": 2}\n')

    def __init__(self, number: int, fails: bool) -> None:
        super().__init__(number)
        self.status = "exited" if fails else "running"

    def reload(self) -> None:
        pass

    def log_text(self) -> str:
        return self.log if self.status == "exited" else ""


class Failing(StandInCluster):
    """Its first `failing` drivers' queries fail; those after run."""

    def __init__(self, failing: int) -> None:
        super().__init__()
        self.failing = failing

    def new_driver(self, name: str, args: list[str], *_: object) -> StandInDriver:
        self.started.append(Exiting(len(self.started), len(self.started) < self.failing))
        return self.started[-1]


def supervised(tmp_path: Path, failing: int, restarts: int, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr("harness.run.driver_supervisor.backoff_s", lambda failures: 0.0)
    history = History(tmp_path / "history.jsonl")
    supervisor = DriverSupervisor(Failing(failing), "d", [], history, tmp_path, "p", "s", restarts)  # type: ignore[arg-type]
    supervisor.start()
    return supervisor, history


def test_a_failed_query_is_restarted_on_its_checkpoint_and_the_run_goes_on(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    supervisor, history = supervised(tmp_path, failing=2, restarts=3, monkeypatch=monkeypatch)
    assert supervisor.check(batch=3) is None  # failed, restarted: fails again
    assert supervisor.check(batch=3) is None  # failed, restarted: runs
    assert supervisor.check(batch=3) is None
    history.close()
    events = read_history(tmp_path / "history.jsonl", ("query.failed", "query.restart"))
    assert [e["type"] for e in events] == ["query.failed", "query.restart"] * 2
    failed = events[0]
    assert (failed["exception"], failed["message"], failed["batch"], failed["last_batch"]) == (
        "confluent_kafka.KafkaException", "KafkaError{code=_FENCED}", 3, 2)
    assert supervisor.current().alias == "driver-2" and supervisor.restarts == 2


def test_restarts_that_run_out_are_a_crash_loop_quoting_each_exception(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    supervisor, history = supervised(tmp_path, failing=10, restarts=2, monkeypatch=monkeypatch)
    stops = [supervisor.check(batch=1) for _ in range(3)]
    history.close()
    assert stops[:2] == [None, None]
    stop = stops[2]
    assert stop is not None and stop["anomaly"] == CRASH_LOOP
    assert stop["reason"] == ("the query failed 3 times (2 restarts): confluent_kafka.KafkaException: "
                              "KafkaError{code=_FENCED}")
    assert [f["failure"] for f in stop["failures"]] == [1, 2, 3]
    assert len(read_history(tmp_path / "history.jsonl", ("query.restart",))) == 2


def test_without_a_supervisor_a_failed_query_is_final(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    supervisor, history = supervised(tmp_path, failing=1, restarts=0, monkeypatch=monkeypatch)
    stop = supervisor.check(batch=0)
    history.close()
    assert stop is not None and stop["anomaly"] == QUERY_FAILED and "restarts are off" in stop["reason"]
    assert read_history(tmp_path / "history.jsonl", ("query.restart",)) == []


class KilledAsLooked(StandInDriver):
    """The nemesis's driver kill that lands while the supervisor looks at the driver: it is seen exited, its
    log without a failure of the query's own."""

    def __init__(self, number: int, on_look: list) -> None:
        super().__init__(number)
        self.status, self.on_look = "running", on_look

    def reload(self) -> None:
        while self.on_look:
            self.on_look.pop()()

    def log_text(self) -> str:
        return "HARNESS-QUERY-STARTED id=q\n"


class NemesisBeside(StandInCluster):
    """Drivers the nemesis may kill as the supervisor looks (`on_look`: what happens during the look)."""

    def __init__(self) -> None:
        super().__init__()
        self.on_look: list = []

    def new_driver(self, name: str, args: list[str], *_: object) -> StandInDriver:
        self.started.append(KilledAsLooked(len(self.started), self.on_look))
        return self.started[-1]


@pytest.mark.parametrize("replaced", [False, True], ids=["its replacement under way", "its replacement done"])
@pytest.mark.parametrize("restarts", [0, 3])
def test_a_driver_the_nemesis_kills_as_the_supervisor_looks_is_never_the_query_s_own_failure(
        tmp_path: Path, replaced: bool, restarts: int) -> None:
    """Seen exited between the supervisor's look at `restarting` and its look at the container, the driver the
    nemesis killed is the nemesis's to replace, at once: no query.failed, no back-off, no second replacement
    of the driver that replaced it (with restarts off, no `query_failed`)."""
    cluster = NemesisBeside()
    history = History(tmp_path / "history.jsonl")
    supervisor = DriverSupervisor(cluster, "d", [], history, tmp_path, "p", "s", restarts)  # type: ignore[arg-type]
    supervisor.start()
    first = supervisor.current()
    killed = threading.Event()

    def kill() -> None:
        first.status = "exited"  # type: ignore[attr-defined]
        killed.set()

    nemesis = threading.Thread(target=supervisor.replace, args=(kill,))

    def the_kill_lands() -> None:
        nemesis.start()
        killed.wait(5)
        if replaced:
            nemesis.join()

    cluster.on_look.append(the_kill_lands)
    started = time.monotonic()
    assert supervisor.check(batch=1) is None
    nemesis.join()
    history.close()
    assert time.monotonic() - started < 1.5  # no back-off
    assert read_history(tmp_path / "history.jsonl", ("query.failed", "query.restart")) == []
    assert supervisor.restarts == 1 and supervisor.current().alias == "driver-1" and cluster.removed == ["driver-0"]


def test_a_query_that_fails_importing_a_module_is_bad_input_naming_the_image_s_packages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sink that imports a module the image does not have (MySQL's connector) when its batch runs: no
    fault did that, so no restart, and no crash loop charged to the sink."""
    message = ("[STREAM_FAILED] Query [id = q] terminated with exception: Traceback (most recent call last):\n"
               "  File \"sink.py\", line 3, in write\n    import mysql.connector\n"
               "ModuleNotFoundError: No module named 'mysql'")
    monkeypatch.setattr(Exiting, "log", f"HARNESS-QUERY-FAILED {json.dumps({'message': message})}\n")
    supervisor, history = supervised(tmp_path, failing=1, restarts=3, monkeypatch=monkeypatch)
    with pytest.raises(BadInput, match=r"sink 's' or pipeline 'p' failed importing in the Spark image: "
                                       r"ModuleNotFoundError: No module named 'mysql' \(its Python packages: "
                                       r"pyspark, delta-spark, .*psycopg2-binary"):
        supervisor.check(batch=0)
    history.close()
    assert read_history(tmp_path / "history.jsonl", ("query.restart",)) == []


def test_an_import_failure_after_a_restart_is_the_query_s_failure_not_bad_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink loaded and ran before: a ModuleNotFoundError it raises after a fault (a driver the nemesis
    replaced) is its failure, counted against the restarts, never bad input that would end the row exit 2."""
    message = "ModuleNotFoundError: No module named 'mysql'"
    monkeypatch.setattr(Exiting, "log", f"HARNESS-QUERY-FAILED {json.dumps({'message': message})}\n")
    supervisor, history = supervised(tmp_path, failing=10, restarts=1, monkeypatch=monkeypatch)
    supervisor.restarts = 1  # the nemesis replaced the first driver
    stops = [supervisor.check(batch=2) for _ in range(2)]
    history.close()
    assert stops[0] is None and stops[1] is not None and stops[1]["anomaly"] == CRASH_LOOP


def test_an_import_failure_after_the_first_batch_is_the_query_s_failure_even_without_a_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault that replaces no driver (a delay at the gate) came before: the sink's import failure at batch 3
    is its own, never bad input."""
    message = "ModuleNotFoundError: No module named 'mysql'"
    monkeypatch.setattr(Exiting, "log", f"HARNESS-QUERY-FAILED {json.dumps({'message': message})}\n")
    supervisor, history = supervised(tmp_path, failing=10, restarts=0, monkeypatch=monkeypatch)
    stop = supervisor.check(batch=3)
    history.close()
    assert stop is not None and stop["anomaly"] == QUERY_FAILED


def test_a_stopped_query_fails_the_verdict_with_its_anomaly_never_unknown() -> None:
    failures = [{"t": 1.0, "exception": "E", "message": "m", "batch": 2, "failure": 1}]
    verdict = close_verdict({}, ReadResult([], {}, {}), {"reason": "the query failed", "anomaly": CRASH_LOOP,
                                                 "failures": failures, "explanation": "after kill:driver fired"},
                            False, 10, 4, 4)
    assert verdict.outcome == FAIL and set(verdict.anomalies) == {CRASH_LOOP, "incomplete"}
    assert verdict.anomalies[CRASH_LOOP].examples[0]["explanation"] == "after kill:driver fired"
    assert "failures" not in verdict.anomalies["incomplete"].examples[0]
    assert close_verdict({}, ReadResult([], {}, {}), {"reason": "no progress"}, False, 10, 4, 4).outcome == UNKNOWN


def test_backoff_doubles_and_is_capped() -> None:
    assert [backoff_s(n) for n in (1, 2, 3, 4, 10)] == [2.0, 4.0, 8.0, 16.0, 30.0]


def test_the_quoted_cause_is_the_python_exception_not_the_log_tail() -> None:
    failure = query_failure(Exiting.log)
    assert str(failure) == "confluent_kafka.KafkaException: KafkaError{code=_FENCED}" and failure.last_batch == 2
    jvm = 'HARNESS-QUERY-FAILED {"message": "[STREAM_FAILED] Query [id = q] terminated with exception: Job aborted ' \
          'due to stage failure\\norg.apache.spark.SparkException: Task failed"}'
    assert str(query_failure(jvm)) == "org.apache.spark.SparkException: Task failed"
    died = "25/11/26 INFO SparkContext: Running\nTraceback (most recent call last):\n  File \"app.py\"\n" \
           "MemoryError: out of memory\n25/11/26 INFO ShutdownHookManager: Deleting directory /tmp/x\n"
    assert str(query_failure(died)) == "MemoryError: out of memory"
    assert str(query_failure("INFO a\nINFO ShutdownHookManager: Deleting directory /tmp/x\n")) == (
        "DriverExited: INFO ShutdownHookManager: Deleting directory /tmp/x")


def spark_task(event: str, tid: int, index: int, attempt: int, host: str, executor: str, launched_ms: int,
               speculative: bool = False, finished_ms: int = 0, reason: str = "") -> bytes:
    """One task event as Spark's JsonProtocol writes it to the event log (the fields read, in its order)."""
    info = {"Task ID": tid, "Index": index, "Attempt": attempt, "Partition ID": index, "Launch Time": launched_ms,
            "Executor ID": executor, "Host": host, "Locality": "PROCESS_LOCAL", "Speculative": speculative,
            "Getting Result Time": 0, "Finish Time": finished_ms, "Failed": False, "Killed": False}
    line = {"Event": f"SparkListenerTask{event}", "Stage ID": 5, "Stage Attempt ID": 0,
            **({"Task Type": "ResultTask", "Task End Reason": {"Reason": reason}} if event == "End" else {}),
            "Task Info": info}
    return json.dumps(line, separators=(",", ":")).encode()


def test_only_tasks_that_ran_more_than_once_have_their_attempts_listed_and_copies_are_spark_s_word() -> None:
    tasks = TaskEvents()
    tasks.read(b"\n".join([
        spark_task("Start", 20, 0, 0, "spark-worker-1", "1", 1_000),
        spark_task("Start", 21, 1, 0, "spark-worker-2", "0", 1_000),
        spark_task("End", 21, 1, 0, "spark-worker-2", "0", 1_000, finished_ms=1_900, reason="Success"),
        b"26/11/26 01:12:04 INFO TaskSetManager: Marking task 0 in stage 5.0 (on spark-worker-1) as speculatable",
        spark_task("Start", 22, 0, 1, "spark-worker-2", "0", 4_000, speculative=True),
        spark_task("End", 22, 0, 1, "spark-worker-2", "0", 4_000, True, finished_ms=5_000, reason="Success"),
        spark_task("End", 20, 0, 0, "spark-worker-1", "1", 1_000, finished_ms=6_000, reason="TaskKilled"),
        b'{"Event":"SparkListenerTaskStart","Task Info":{"Task ID":[[[[',  # a line cut short by a killed driver
    ]))
    attempts = tasks.repeated()
    assert [(a["task"], a["attempt"], a["container"], a["outcome"]) for a in attempts] == [
        (0, 0, "spark-worker-1", "lost: TaskKilled"), (0, 1, "spark-worker-2", "finished")]
    assert attempts[1]["ended"] - attempts[1]["t"] == 1.0
    assert [described(copy) for copy in tasks.speculative] == [
        "task 0.1 in stage 5.0 (TID 22) on spark-worker-2, executor 0"]


def test_a_speculatable_line_the_sink_prints_is_no_speculation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's log is the sink's stdout: the judge's evidence of a copy is Spark's event log alone."""
    monkeypatch.setattr(StandInDriver, "log_text",
                        lambda self: "INFO TaskSetManager: Marking task 0 in stage 5.0 (on w) as speculatable\n")
    history = History(tmp_path / "history.jsonl")
    supervisor = DriverSupervisor(StandInCluster(), "d", [], history, tmp_path, "p", "s")  # type: ignore[arg-type]
    supervisor.start()
    supervisor.retire()
    history.close()
    assert read_history(tmp_path / "history.jsonl", ("speculation",)) == []
