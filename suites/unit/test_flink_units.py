"""Flink's engine, its pure parts: a job's checkpoints read from the volume as batches, the client's words on a
failed submission, Flink's dynamic properties, the commands' checks of `--engine flink`, and the fault space a
Flink job gets."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from docker.errors import APIError

from harness import versions
from harness.catalog import jobs
from harness.certify.rows import MatrixRun
from harness.cli.options import engine_subject
from harness.cluster.flink import JOB_SETTINGS, SETTINGS, FlinkJobManager, dynamic, last_failure
from harness.errors import BadInput
from harness.explore.explorer import subject_of
from harness.faults.space import Observation, space
from harness.faults.spec import TRANSACTION_POINTS
from harness.gate import relay
from harness.run import flink_checkpoints
from harness.run.flink_checkpoints import FlinkCheckpoints, checkpoint_id
from harness.run.flink_session import job_pipeline, resolve_job
from harness.run.flink_supervisor import client_error
from harness.settings import ENGINES, FLINK
from harness.subject.pipeline import load_pipeline
from suites.unit.test_checkpoint import VolumeFiles

pytestmark = pytest.mark.unit


@pytest.fixture
def volume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(relay, "ROOT", str(tmp_path.resolve()))
    return tmp_path


def checkpoint(volume: Path, job: str, number: int, complete: bool = True) -> None:
    folder = volume / "flink" / job / f"chk-{number}"
    folder.mkdir(parents=True)
    if complete:
        (folder / "_metadata").write_bytes(b"\x00flink")
    else:
        (folder / "partial").write_bytes(b"")


def test_completed_checkpoints_of_the_scenarios_jobs_are_its_batches(volume: Path) -> None:
    checkpoint(volume, "a" * 32, 1)
    checkpoint(volume, "a" * 32, 2)
    checkpoint(volume, "b" * 32, 3)  # the job restored from chk-2 numbers on
    checkpoint(volume, "b" * 32, 4, complete=False)
    checkpoint(volume, "c" * 32, 9)  # another scenario's job
    path = str(volume.resolve() / "flink")
    folder = FlinkCheckpoints(VolumeFiles(), path, lambda: ["a" * 32, "b" * 32], None, "group")  # type: ignore[arg-type]

    assert folder.planned() == [1, 2, 3, 4] and folder.committed() == [1, 2, 3]
    assert folder.latest() == f"{path}/{'b' * 32}/chk-3"
    assert not folder.stateful() and folder.end_offsets(3) == {}


def test_a_checkpoint_is_triggered_once_its_folder_is_made_even_empty(volume: Path) -> None:
    (volume / "flink" / ("a" * 32) / "chk-5").mkdir(parents=True)
    (volume / "flink" / ("a" * 32) / "shared").mkdir()
    folder = FlinkCheckpoints(VolumeFiles(), str(volume / "flink"), lambda: ["a" * 32], None, "group")  # type: ignore[arg-type]
    assert folder.planned() == [5] and folder.committed() == [] and folder.latest() is None


def test_no_checkpoint_yet_restores_from_nothing(volume: Path) -> None:
    folder = FlinkCheckpoints(VolumeFiles(), str(volume / "flink"), lambda: [], None, "group")  # type: ignore[arg-type]
    assert folder.latest() is None and folder.committed() == []


def test_only_flinks_checkpoint_folders_are_numbered() -> None:
    assert checkpoint_id("chk-12") == 12
    assert checkpoint_id("chk-x") is None and checkpoint_id("shared") is None and checkpoint_id("chk-²") is None


def test_a_failed_submission_is_told_in_the_jobs_own_words() -> None:
    said = "Traceback ...\nHARNESS-JOB-ERROR ModuleNotFoundError: No module named 'foo'\nmore"
    assert client_error(said) == "ModuleNotFoundError: No module named 'foo'"
    said = ("pyflink.util.exceptions.TableException: org.apache.flink.table.api.TableException: Failed\n"
            "Caused by: java.lang.NullPointerException: rest.address must be set\n"
            "org.apache.flink.client.program.ProgramAbortException: java.lang.RuntimeException: Python process exits\n"
            "Caused by: java.lang.RuntimeException: Python process exits with code: 1\n")
    assert client_error(said) == "java.lang.NullPointerException: rest.address must be set"
    assert client_error("one\ntwo") == "one | two"


def test_settings_go_to_flink_as_dynamic_properties() -> None:
    assert dynamic({"a.b": "1", "c": "x y"}) == ["-D", "a.b=1", "-D", "c=x y"]
    assert JOB_SETTINGS["execution.checkpointing.externalized-checkpoint-retention"] == "RETAIN_ON_CANCELLATION"
    spread = f"`taskmanager.load-balance.mode: {SETTINGS['taskmanager.load-balance.mode']}`"
    assert spread in (Path(__file__).parents[2] / "docs/guides/flink.md").read_text()  # as the guide says


def test_a_failed_job_s_cause_is_its_newest_exception_on_either_flink_line() -> None:
    trace = "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelay\n\tat org.apache..."
    newest = {"exceptionHistory": {"entries": [{"exceptionName": "JobException", "stacktrace": trace},
                                               {"exceptionName": "Older", "stacktrace": "Older: before"}],
                                   "truncated": True}}
    said = "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelay"
    assert last_failure(newest) == said  # Flink 2.x: the history alone
    assert last_failure({"root-exception": trace, **newest}) == said  # 1.20: its older field beside it
    assert last_failure({"exceptionHistory": {"entries": []}}) == last_failure({}) == "no exception reported"


def test_a_job_names_the_pipeline_that_judges_it(tmp_path: Path) -> None:
    assert resolve_job("kafka_exactly_once").attribute == "job"
    nameless = tmp_path / "nameless_job.py"
    nameless.write_text("def job(env, context):\n    return None\n")
    with pytest.raises(BadInput, match="PIPELINE"):
        resolve_job(str(nameless))
    assert ENGINES[0] == "spark"


@pytest.mark.parametrize("job", [path.stem for path in Path(jobs.__file__).parent.glob("[!_]*.py")])
def test_every_catalog_job_names_a_pipeline_that_loads_and_the_guide_lists_it(job: str) -> None:
    assert load_pipeline(job_pipeline(resolve_job(job))).name == job_pipeline(resolve_job(job))
    assert f"| `{job}` |" in (Path(__file__).parents[2] / "docs/guides/flink.md").read_text()


def test_a_flink_job_gets_the_space_without_spark_s_own_classes_with_its_checkpoints() -> None:
    def seen(engine: str) -> Observation:
        return Observation({p: frozenset({"executors"}) for p in TRANSACTION_POINTS}, 120.0, True, brokers=3,
                           engine=engine)

    spark = {fault.row: fault for fault in space(seen("spark"))}
    flink = {fault.row: fault for fault in space(seen(FLINK))}
    spark_own = {row for row, fault in spark.items()
                 if fault.speculation or fault.live or fault.point == "state.committed"}
    at_batch = {row for row in spark if "batch.planned" in row}
    assert set(spark) - set(flink) == spark_own | at_batch
    for row in at_batch - spark_own:  # a kill lands after a checkpoint completed: it is at the completion
        point = "checkpoint.completed" if spark[row].action == "kill" else "checkpoint.triggered"
        assert row.replace("batch.planned", point) in flink
    assert not [fault for fault in flink.values() if fault.action == "kill" and fault.point == "checkpoint.triggered"]
    assert flink["kill-controller-checkpoint.completed"].faults == ("kill:controller@checkpoint.completed:2",)
    assert flink["isolate-executor-checkpoint.triggered"].ways == (
        ("isolate:executor@checkpoint.triggered:3/30s",), ("isolate:executor@checkpoint.triggered:4/30s",))
    assert "checkpoint 2 is completed" in flink["kill-controller-checkpoint.completed"].what
    assert not any("batch" in step for fault in flink.values() for step in fault.faults)
    assert {"kill-driver-checkpoint.completed", "kill-executor-checkpoint.completed",
            "isolate-driver-checkpoint.triggered", "isolate-executor-checkpoint.triggered",
            "isolate-executor-checkpoint.completed"} <= set(flink)
    assert flink["slow-recovery-txn.pre_commit"].faults == ("kill:sender@txn.pre_commit#2",
                                                         "then delay:sender@txn.pre_commit/125s")
    assert {"kill-driver-txn.pre_commit", "delay-endtxn-txn.pre_commit-long",
            "kill-coordinator-txn.commit"} <= set(flink)
    assert Observation.from_dict(seen(FLINK).to_dict()) == seen(FLINK)
    assert "Flink's heartbeat timeout" in flink["pause-executor-txn.pre_commit"].what
    assert "Spark" not in flink["pause-executor-txn.pre_commit"].what
    written_before = {key: value for key, value in seen("spark").to_dict().items() if key != "engine"}
    assert Observation.from_dict(written_before).engine == "spark"  # a shard's certificate from before engines


def test_a_checkpoint_point_fires_on_its_batch_point_and_is_refused_on_spark() -> None:
    from harness.faults.spec import FIRES_ON, parse_step, spark_steps

    step = parse_step("kill:driver@checkpoint.triggered:2")
    assert step.number == 2 and FIRES_ON[step.point] == "batch.planned"
    assert FIRES_ON["checkpoint.completed"] == "batch.committed"
    with pytest.raises(BadInput, match="a Flink job's checkpoint"):
        spark_steps([step])
    with pytest.raises(BadInput, match="bad batch id"):
        parse_step("kill:driver@checkpoint.completed:x")


def test_a_flink_plan_lists_the_job_s_rows_not_spark_s(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.certify.certification import print_plan
    from harness.certify.matrix import flink_matrix

    job = resolve_job("kafka_exactly_once")
    print_plan(job, load_pipeline("passthrough"), quick=False, engine=FLINK)
    printed = capsys.readouterr().out
    assert "kill-driver-checkpoint.completed" in printed and "batch.planned" not in printed
    assert "speculation" not in printed and "live-" not in printed
    assert [row.name for row in flink_matrix()].count("baseline") == 1


def test_certify_takes_a_job_for_flink_and_a_sink_for_spark() -> None:
    def subject(engine: str, sink: str | None, job: str | None) -> str:
        return engine_subject(argparse.Namespace(engine=engine, sink=sink, job=job), "certify")

    assert subject(FLINK, None, None) == "kafka_exactly_once"
    assert subject(FLINK, None, "bad_at_least_once") == "bad_at_least_once"
    assert subject("spark", "transactional", None) == "transactional"
    for engine, sink, job, said in ((FLINK, "transactional", None, "not --sink"),
                                    ("spark", None, "j", "--engine flink"), ("spark", None, None, "needs --sink")):
        with pytest.raises(BadInput, match=said):
            subject(engine, sink, job)


def test_explore_keeps_a_flink_job_s_coverage_apart_from_spark_s() -> None:
    flink = subject_of(MatrixRun("kafka_exactly_once", engine=FLINK), versions.stack())
    assert f"Flink {versions.FLINK_VERSIONS[0]}" in flink and "pipeline passthrough" in flink
    assert "Flink" not in subject_of(MatrixRun("transactional", engine="spark"), versions.stack())


def test_a_job_s_consumption_is_asked_of_the_broker_only_once_a_checkpoint_completed(
        volume: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str, str]] = []
    monkeypatch.setattr(flink_checkpoints, "committed_offsets", lambda *args: asked.append(args) or {0: 5})
    folder = FlinkCheckpoints(VolumeFiles(), str(volume / "flink"), lambda: ["a" * 32], "broker:9093", "group")
    assert folder.consumed("in") == {} and not asked  # no OffsetFetch for a group the broker has not seen
    checkpoint(volume, "a" * 32, 1)
    assert folder.consumed("in") == {0: 5} and asked == [("broker:9093", "group", "in")]


def test_a_fault_at_a_checkpoint_s_trigger_that_took_effect_after_it_completed_missed_its_point(
        volume: Path, tmp_path: Path) -> None:
    from harness.history import History, read_history
    from harness.run.checkpoint_window import missed_in_flight

    checkpoint(volume, "a" * 32, 2)
    completed = (volume / "flink" / ("a" * 32) / "chk-2" / "_metadata").stat().st_mtime
    folder = FlinkCheckpoints(VolumeFiles(), str(volume / "flink"), lambda: ["a" * 32], None, "group")  # type: ignore[arg-type]
    assert folder.completed_at(2) == completed and folder.completed_at(3) is None
    for effect_at, missed in ((completed + 0.2, True), (completed - 0.2, False)):
        history = History(tmp_path / f"history-{missed}.jsonl")
        for step in ("kill:driver@checkpoint.triggered:2", "kill:driver@checkpoint.completed:2"):
            point = step.split("@")[1].split(":")[0]
            history._file.write(json.dumps({"t": effect_at - 0.05, "type": "trigger", "step": step, "point": point})
                                + "\n" + json.dumps({"t": effect_at, "type": "effect", "fault": step}) + "\n")
        said = missed_in_flight(history, folder)
        history.close()
        assert said == (["kill:driver@checkpoint.triggered:2"] if missed else [])
        events = read_history(history.path, types=("point.missed",))
        assert [e["checkpoint"] for e in events] == ([2] if missed else [])


def test_a_checkpoint_flink_deleted_completed_no_later_than_the_watcher_saw_it(volume: Path, tmp_path: Path) -> None:
    from harness.history import History
    from harness.run.checkpoint_window import missed_in_flight

    folder = FlinkCheckpoints(VolumeFiles(), str(volume / "flink"), lambda: ["a" * 32], None, "group")  # type: ignore[arg-type]
    assert folder.completed_at(2) is None  # chk-2 replaced by a newer checkpoint, its folder gone
    step = "kill:executor@checkpoint.triggered:2"
    for seen_at, missed in ((100.0, True), (101.0, False)):
        history = History(tmp_path / f"history-{missed}.jsonl")
        for event in ({"t": 99.9, "type": "trigger", "step": step, "point": "checkpoint.triggered"},
                      {"t": seen_at, "type": "batch.committed", "batch": 2},
                      {"t": 100.5, "type": "effect", "fault": step}):
            history._file.write(json.dumps(event) + "\n")
        assert missed_in_flight(history, folder) == ([step] if missed else [])
        history.close()


def test_a_jobmanager_killed_while_its_job_is_asked_about_leaves_the_state_unknown() -> None:
    """The supervisor asks the job's state while a fault may kill the JobManager: the engine then refuses the
    command (409, "is not running"), which is Flink not saying, not the scenario's error."""
    class Killed:
        def exec_run(self, cmd: list[str], environment: dict[str, str], user: str) -> None:
            raise APIError("409 Client Error: Conflict (\"Container abc is not running\")")

    manager = FlinkJobManager.__new__(FlinkJobManager)  # no Docker: only the REST calls are exercised
    manager.alias = "jobmanager"
    manager.get_wrapped_container = lambda: Killed()  # type: ignore[method-assign]
    assert manager.job_state("0123") == "UNKNOWN"
    assert manager.slots() == 0
    assert manager.job_failure("0123").startswith("unknown (Flink's REST API GET /jobs/0123/exceptions")
