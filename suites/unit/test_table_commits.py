"""A table output's commit point and history: `table.committed` seen through stand-in relay files (the
driver held at a version, the batch Spark runs, Spark's commit log), the schedule firing there with the
hold settled by the fault, and a batch committed twice named with its versions."""

from __future__ import annotations

import threading

import pytest

from harness.checker.commits import batches_committed_twice, with_commit_history
from harness.checker.judge import INEFFECTIVE, judge
from harness.checker.verdict import AT_LEAST_ONCE, EXACTLY_ONCE, FAIL, PASS, Verdict
from harness.driver.table_hold import RELEASE_AFTER_S, new_versions
from harness.faults.schedule import Schedule
from harness.faults.space import Observation, space
from harness.faults.spec import TABLE as TABLE_KIND
from harness.faults.spec import parse_schedule
from harness.history import History, read_history
from harness.output.base import holds_folder
from harness.output.commits import Commit
from harness.output.delta.log import VERSION_FILE
from harness.output.delta.table import DeltaTable
from harness.run.checkpoint import CheckpointFolder
from harness.run.table_watch import DriverHolds, GateHolds, TableWatcher
from suites.unit.test_delta_output import StandInFiles, add, entry, log_path, streaming

pytestmark = pytest.mark.unit
TABLE = "/checkpoints/s-table"
CHECKPOINT = "/checkpoints/s"
HOLDS = holds_folder(TABLE)


class Settled:
    """What on_commit was given, and what became of the hold."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.holds: list = []

    def __call__(self, event: dict, hold) -> None:  # type: ignore[no-untyped-def]
        self.events.append(event)
        self.holds.append(hold)


def batches(files: StandInFiles, planned: list[int], committed: list[int]) -> None:
    """offsets/N planned at N * 1000 ms (Spark's batchTimestampMs), commits/N."""
    for n in planned:
        metadata = f'{{"batchWatermarkMs":0,"batchTimestampMs":{n * 1000}}}'
        files.write(f"{CHECKPOINT}/offsets/{n}", f"v1\n{metadata}\n{{}}\n".encode())
    for n in committed:
        files.write(f"{CHECKPOINT}/commits/{n}", b"v1\n")


def watcher(files: StandInFiles, history: History, settled: Settled) -> TableWatcher:
    return TableWatcher(DeltaTable(files, TABLE), DriverHolds(files, holds_folder(TABLE)),
                        CheckpointFolder(files, CHECKPOINT), history, settled)


def committed_at(ms: int) -> dict:
    return {"commitInfo": {"timestamp": ms, "operation": "WRITE"}}


def test_a_version_without_a_batch_id_is_the_batch_spark_ran_when_it_committed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    files.write(log_path(0), entry(add("a.parquet"), committed_at(500)))
    batches(files, [0], [])
    files.write(f"{HOLDS}/abc-0.held", b"0")
    watch.poll()
    assert settled.events[0]["batch"] == 0 and settled.events[0]["by"] == "running" and settled.events[0]["held"]
    assert watch.attributed == {0: 0}
    settled.holds[0].release()
    assert f"{HOLDS}/abc-0.release" in files.data  # the driver goes on

    batches(files, [1], [0, 1])  # batch 1's version is seen only after Spark committed batch 1: not the point
    files.write(log_path(1), entry(add("b.parquet"), *streaming("q", 1)))
    files.write(f"{HOLDS}/abc-1.held", b"1")
    watch.poll()
    assert len(settled.events) == 1 and f"{HOLDS}/abc-1.release" in files.data
    history.close()
    recorded = read_history(tmp_path / "history.jsonl", ("table.committed",))
    assert [(e["version"], e["batch"], e["by"], e["point"]) for e in recorded] == [(0, 0, "running", True),
                                                                                 (1, 1, "txn", False)]


def test_a_new_version_waits_for_its_hold_to_be_said(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0, 1, 2], [0])
    files.write(log_path(0), entry(add("a.parquet"), committed_at(900)))  # looked at late: batch 2 is planned
    files.write(log_path(1), entry(add("b.parquet"), committed_at(1500)))
    files.write(f"{HOLDS}/t-0.held", b"0")
    watch.poll()
    assert [e["version"] for e in settled.events] == [] and len(history_events(tmp_path, history)) == 1
    files.write(f"{HOLDS}/t-1.held", b"1")
    watch.poll()
    assert [(e["version"], e["batch"]) for e in settled.events] == [(1, 1)]  # version 0: batch 0, committed
    assert watch.attributed == {0: 0, 1: 1}
    history.close()


def history_events(tmp_path, history: History) -> list[dict]:  # type: ignore[no-untyped-def]
    """The table.committed events recorded so far."""
    history._file.flush()
    return read_history(tmp_path / "history.jsonl", ("table.committed",))


def test_the_schedule_fires_at_table_committed_and_the_fault_settles_the_hold(tmp_path) -> None:  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")
    injected: list = []

    class StandInNemesis:
        def inject(self, step, event, hold) -> None:  # type: ignore[no-untyped-def]
            injected.append((str(step), hold))

    class Hold:
        what = "table version"

        def __init__(self) -> None:
            self.released = threading.Event()

        def release(self) -> None:
            self.released.set()

        drop = release

    schedule = Schedule(parse_schedule(["kill:driver@table.committed:2"]), StandInNemesis(), history)  # type: ignore[arg-type]
    passing, firing = Hold(), Hold()
    schedule.on_table_commit({"type": "table.committed", "batch": 1}, passing)
    assert passing.released.is_set() and not schedule.fired
    schedule.on_table_commit({"type": "table.committed", "batch": 2}, firing)
    schedule.close()
    assert injected == [("kill:driver@table.committed:2", firing)] and not firing.released.is_set()
    history.close()


def commit(version: int, batch: int | None = None, app: str | None = None, by_epoch: bool = False) -> Commit:
    if by_epoch:
        return Commit(version, "STREAMING UPDATE", query_id="q", epoch=batch)
    return Commit(version, "WRITE", app_id=app, txn_version=batch)


def test_a_batch_in_two_versions_is_named_with_them() -> None:
    history = [commit(0, 0, "a"), commit(1, 1, "a"), commit(2, 2, "a"), commit(3, 2, "b"), commit(4, 3, "b")]
    anomaly = batches_committed_twice(history, {})
    assert anomaly is not None and anomaly.count == 1
    assert anomaly.examples[0]["batch"] == 2 and anomaly.examples[0]["versions"] == [2, 3]
    assert anomaly.examples[0]["app_ids"] == ["a", "b"]
    assert batches_committed_twice([commit(0, 0, by_epoch=True), commit(1, 1, by_epoch=True)], {}) is None


def test_a_blind_append_is_attributed_only_where_its_batch_is_known() -> None:
    blind = [commit(0), commit(1), commit(2), commit(3)]
    assert batches_committed_twice(blind, {}) is None  # nothing said, nothing guessed
    anomaly = batches_committed_twice(blind, {1: 1, 2: 2, 3: 2})
    assert anomaly is not None and anomaly.examples[0]["versions"] == [2, 3]
    assert anomaly.examples[0]["batch_named_by"] == ["committed while Spark ran the batch"] * 2


def test_the_history_s_anomaly_fails_a_verdict_whose_rows_looked_right() -> None:
    clean = Verdict(PASS, EXACTLY_ONCE, {}, 10, 10, 10)
    failed = with_commit_history(clean, batches_committed_twice([commit(0, 1), commit(1, 1)], {}))
    assert failed.outcome == FAIL and failed.guarantee == AT_LEAST_ONCE
    assert "batch_committed_twice" in failed.anomalies
    assert with_commit_history(clean, None) is clean


def test_a_table_sink_s_space_is_drawn_from_its_table_commits_not_kafka_s_points() -> None:
    events = [{"type": "table.committed", "point": True, "version": 1, "batch": 1},
              {"type": "table.committed", "point": False, "version": 2, "batch": 2}]
    seen = Observation.from_events(events, stateful=False, output="delta")
    assert seen.kind == TABLE_KIND and seen.counts == {"table.committed": 1}
    classes = {c.row: c for c in space(seen)}
    assert classes["kill-driver-table.committed"].faults == ("kill:driver@table.committed:2",)
    assert classes["kill-driver-table.committed"].quick
    assert not [row for row in classes if "produce" in row or "txn." in row]
    assert "kill-driver-table.committed" not in {c.row for c in space(Observation.from_events([], False,
                                                                                               output="delta"))}


def test_the_hold_finds_new_versions_in_the_log_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for name in ("00000000000000000000.json", "00000000000000000002.json", "00000000000000000001.crc",
                 ".00000000000000000003.json.1a2b.tmp", "00000000000000000001.json", "0000000000000000000٣.json"):
        (tmp_path / name).write_text("")
    assert new_versions(str(tmp_path), VERSION_FILE, {0}) == [1, 2]


def test_a_duplicate_in_a_table_is_explained_by_the_versions_that_hold_its_copies() -> None:
    from harness.checker.verdict import Anomaly
    from harness.client.records import OutputRecord, Records
    from harness.run.explain import explain_by_commits

    records = Records([OutputRecord(0, 0, b"k", b"a"), OutputRecord(1, 0, b"k", b"b"), OutputRecord(2, 0, b"k", b"a")])
    duplicate = Anomaly("duplicate")
    duplicate.add({"id": "a"})
    verdict = Verdict(FAIL, AT_LEAST_ONCE, {"duplicate": duplicate}, 2, 3, 2)
    explain_by_commits(verdict, records, ["a", "b", "a"], [2, 3, 5].__getitem__, {2: 2, 5: 2})
    assert duplicate.examples[0]["explanation"] == "read 2 times: written by table versions 2 (batch 2) and 5 (batch 2)"


def test_a_duplicate_read_from_a_data_file_written_twice_names_both_writes() -> None:
    from harness.checker.verdict import Anomaly
    from harness.client.records import OutputRecord, Records
    from harness.run.explain import explain_by_commits, overwrites

    records = Records([OutputRecord(0, 0, b"k", b"a"), OutputRecord(1, 0, b"k", b"a")])
    duplicate = Anomaly("duplicate")
    duplicate.add({"id": "a"})
    verdict = Verdict(FAIL, AT_LEAST_ONCE, {"duplicate": duplicate}, 1, 2, 1)
    events = [{"t": 100.0, "type": "scenario.start"},
              {"t": 160.5, "type": "s3.overwrite", "bucket": "b", "key": "t/data/00002-3-q-0-00001.parquet",
               "first_at": 130.0, "first_by": "w1 (executors)", "by": "w2 (executors)"}]
    again = overwrites(events)
    files = ["b/t/data/00000-2-q-0-00001.parquet", "b/t/data/00002-3-q-0-00001.parquet"]
    explain_by_commits(verdict, records, ["a", "a"], [1, 1].__getitem__, {1: 0}, "table version",
                       lambda partition: again.get(files[partition]))
    assert duplicate.examples[0]["explanation"] == (
        "read 2 times: written by table version 1 (batch 0); its data file 00002-3-q-0-00001.parquet was "
        "overwritten: written at 30.0 s by w1 (executors), again at 60.5 s by w2 (executors)")


def test_table_versions_are_drawn_on_the_output_lane() -> None:
    from harness.report.swimlanes import swimlanes_svg

    events = [{"t": 1.0, "type": "scenario.start"},
              {"t": 2.0, "type": "table.committed", "version": 2, "batch": 2, "by": "running", "held": True,
               "point": True},
              {"t": 3.0, "type": "table.committed", "version": 3, "batch": 2, "by": "txn", "held": False,
               "point": False}]
    svg = swimlanes_svg(events, {}, {})
    assert "table version 2: batch 2 (running), driver held<" in svg
    assert "table version 3: batch 2 (txn); batch 2 again, first in version 2<" in svg  # committed twice: red
    events[2]["operation"] = "MERGE"
    events.append({"t": 4.0, "type": "table.repeat", "batch": 2, "versions": [2, 3]})
    svg = swimlanes_svg(events, {}, {})
    assert "table version 3 (MERGE): batch 2 (txn); batch 2 again, first in version 2: an idempotent repeat<" in svg
    assert svg.count('fill="#e67e22"') == 1 and 'fill="#c0392b"><title>table' not in svg


def test_a_hold_said_late_is_released_and_a_later_one_waits_its_turn(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0, 1], [])
    files.write(log_path(0), entry(add("a.parquet"), committed_at(100)))
    watch.poll(final=True)  # version 0 recorded without a hold
    files.write(log_path(1), entry(add("b.parquet"), committed_at(1100)))
    files.write(f"{HOLDS}/t-0.held", b"0")  # said late
    files.write(f"{HOLDS}/t-2.held", b"2")  # not in the log yet: stays held
    watch.poll()
    assert f"{HOLDS}/t-0.release" in files.data and f"{HOLDS}/t-2.release" not in files.data
    history.close()


def test_hold_and_log_names_of_another_form_are_ignored(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The sink can write beside the table and its holds: a name that is not `<token>-<version>.held` would
    have ended the watcher's thread, and a version in other digits than ASCII (`\\d` takes them) named a log
    entry that is not there, which the watcher waited on for good, seeing no later version."""
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0], [])
    files.write(log_path(0), entry(add("a.parquet"), committed_at(500)))
    files.write(f"{TABLE}/_delta_log/0000000000000000000٣.json", b"{}")
    for name in ("t-².held", "x.held", "t-abc.held"):
        files.write(f"{HOLDS}/{name}", b"")
    files.write(f"{HOLDS}/t-0.held", b"0")
    watch.poll()
    assert [(e["version"], e["batch"]) for e in settled.events] == [(0, 0)] and watch.seen == {0}
    history.close()


def missed(tmp_path, history: History) -> list[dict]:  # type: ignore[no-untyped-def]
    history._file.flush()
    return read_history(tmp_path / "history.jsonl", ("point.missed",))


def at_the_point(tmp_path, held: bool) -> tuple[StandInFiles, Settled, History]:  # type: ignore[no-untyped-def]
    """A watcher that has seen table version 0 at its point (batch 0 planned, not in Spark's commit log),
    the driver held there or not: what it handed the fault, and its history."""
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0], [])
    files.write(log_path(0), entry(add("a.parquet"), *streaming("q", 0)))
    if held:
        files.write(f"{HOLDS}/t-0.held", b"0")
    watch.poll()
    return files, settled, history


def test_a_fault_settled_before_spark_commits_its_batch_landed_at_the_point(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled, history = at_the_point(tmp_path, held=True)
    settled.holds[0].drop()  # the fault's effect is done, the driver still held
    assert f"{HOLDS}/t-0.release" in files.data and not missed(tmp_path, history)
    history.close()


@pytest.mark.parametrize("held", [True, False])
def test_a_driver_that_went_on_before_the_fault_settled_leaves_the_point_missed(tmp_path, held: bool) -> None:  # type: ignore[no-untyped-def]
    """The sink runs in the driver's process and can signal its own JVM on (or kill the hold): Spark's
    commit of the batch before the fault took effect means the fault was not at its point, and the row
    is ineffective, never a pass."""
    files, settled, history = at_the_point(tmp_path, held)
    batches(files, [], [0])  # the JVM went on and Spark committed batch 0
    settled.holds[0].drop()
    [event] = missed(tmp_path, history)
    assert (event["version"], event["batch"], event["held"]) == (0, 0, held)
    history.close()
    verdict = Verdict(PASS, EXACTLY_ONCE, {}, expected=1, observed=1, distinct=1)
    judgement = judge(verdict, [{"type": "effect", "t": 1.0}, event], ["kill:driver@table.committed:0"])
    assert judgement.outcome == INEFFECTIVE and "before the fault at table version 0" in judgement.reasons[0]


def test_a_commit_the_sink_renamed_away_is_still_seen_in_the_holds_journal(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The hold (root's) writes Spark's commit log down as it appears: a sink that lets its JVM go on and
    renames `commits/0` out of sight until the fault settled leaves the point missed all the same."""
    files, settled, history = at_the_point(tmp_path, held=True)
    files.write(f"{HOLDS}/t.commits", b"0\n")  # commits/0 appeared (and is gone from the listing again)
    settled.holds[0].drop()
    [event] = missed(tmp_path, history)
    assert (event["version"], event["batch"], event["held"]) == (0, 0, True)
    history.close()


def test_a_version_naming_a_file_that_is_gone_is_recorded_and_the_watch_goes_on(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from harness.output.commits import TableCorrupt

    class Gone:
        def versions_now(self) -> list[int]:
            return [0, 1]

        def commit(self, version: int) -> Commit:
            if version == 0:
                raise TableCorrupt("t", "t/metadata/snap-1.avro")
            return Commit(version, "append", epoch=0, added=("a",), named_by="summary")

    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = TableWatcher(Gone(), None, CheckpointFolder(files, CHECKPOINT), history, settled)  # type: ignore[arg-type]
    batches(files, [0], [])
    watch.poll()
    assert watch.seen == {0, 1}
    [gone, seen] = history_events(tmp_path, history)
    assert gone["missing"] == "t/metadata/snap-1.avro" and not gone["point"] and seen["batch"] == 0
    history.close()


class Later:
    """A stand-in for the gate's loop: what is set to run later."""

    def __init__(self) -> None:
        self.set: list[tuple[float, object]] = []

    def call_later(self, delay: float, callback: object) -> None:
        self.set.append((delay, callback))


class GateHold:
    """A stand-in for a gate's hold of a commit's answer (harness.gate.points.Hold)."""

    def __init__(self) -> None:
        self.released = False
        self.loop = Later()

    def release(self) -> None:
        self.released = True


def test_on_object_storage_a_commit_s_answer_is_held_at_the_gate_until_its_version_is_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    at_gate = GateHolds()
    watch = TableWatcher(DeltaTable(files, TABLE), at_gate, CheckpointFolder(files, CHECKPOINT), history, settled)
    batches(files, [0, 1], [0])
    files.write(log_path(0), entry(add("a.parquet"), *streaming("q", 0)))
    zero = GateHold()
    at_gate.add(zero)  # type: ignore[arg-type]
    watch.poll()
    assert zero.released and not settled.events  # batch 0 is in Spark's commit log: not the point
    files.write(log_path(1), entry(add("b.parquet"), *streaming("q", 1)))  # applied; its answer not at the gate yet
    watch.poll()
    assert watch.seen == {0}  # waits for its hold
    one = GateHold()
    at_gate.add(one)  # type: ignore[arg-type]
    watch.poll()
    assert [(e["version"], e["batch"], e["held"]) for e in settled.events] == [(1, 1, True)] and not one.released
    settled.holds[0].release()
    assert one.released
    history.close()


def test_a_held_answer_that_made_no_version_is_let_go_after_one_look(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    at_gate = GateHolds()
    watch = TableWatcher(DeltaTable(files, TABLE), at_gate, CheckpointFolder(files, CHECKPOINT), history, settled)
    nothing = GateHold()
    at_gate.add(nothing)  # type: ignore[arg-type]
    assert nothing.loop.set == [(RELEASE_AFTER_S, nothing.release)]  # a watcher that stops never stalls the stream
    watch.poll()
    assert nothing.released and not settled.events
    history.close()


def test_the_gate_holds_only_applied_commits_for_the_watcher_and_never_a_step_s_point(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from harness.gate.http_points import HttpAnswer, HttpCommit
    from harness.gate.points import FOR_WATCHER, GateEvent, Peer

    history = History(tmp_path / "history.jsonl")
    at_gate = GateHolds()
    schedule = Schedule(parse_schedule(["drop:sender@s3.put#2"]), None, history, at_gate)  # type: ignore[arg-type]
    peer = Peer("driver", "driver", "10.0.0.2", service="s3")
    put = HttpCommit("PUT", "/harness/t/_delta_log/00000000000000000001.json", {})

    def answer(status: int) -> GateEvent:
        return GateEvent("s3.put", peer, 1, HttpAnswer(put, status))

    assert schedule.on_point(answer(200)) == FOR_WATCHER  # the first: held for the watcher, no fault's hold
    assert schedule.on_point(answer(200)) is True and schedule.fired  # the second: the step's
    assert not schedule.on_point(answer(412))  # refused: nothing was applied
    assert not schedule.on_point(GateEvent("s3.put", peer, 1, put))  # on its way in: the server has not seen it
    schedule.close()
    history.close()


def test_a_rewritten_file_fails_the_verdict_and_breaks_every_guarantee_with_its_overwrite_as_explanation() -> None:
    from harness.checker.table_files import with_rewritten_files
    from harness.checker.verdict import EXACTLY_ONCE, NONE, PASS

    passed = Verdict(PASS, EXACTLY_ONCE, {}, 3, 3, 3)
    assert with_rewritten_files(passed, [], {}.get) is passed
    file = {"file": "b/t/data/00002-2-q-0-00001.parquet", "version": 1, "committed_rows": 269, "rows": 147}
    failed = with_rewritten_files(passed, [file], {file["file"]: "its data file was overwritten"}.get)
    assert (failed.outcome, failed.guarantee) == (FAIL, NONE)
    assert failed.anomalies["file_rewritten"].examples == [{**file, "explanation": "its data file was overwritten"}]


GARBAGE = [b'{"add":{}}\n', b"[" * 100_000, b"\x1f\x8b\x08\x00garbage", b'{"txn":{"version":"x"}}']


@pytest.mark.parametrize("garbage", GARBAGE, ids=["add-without-path", "deep-json", "gzip-bytes", "txn-not-a-number"])
def test_a_version_the_watcher_cannot_parse_is_recorded_unreadable_and_it_goes_on(tmp_path, garbage: bytes) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0, 1], [])
    files.write(log_path(0), garbage)
    files.write(log_path(1), entry(add("b.parquet"), committed_at(1500)))
    watch.poll(final=True)
    history.close()
    recorded = read_history(tmp_path / "history.jsonl", ("table.committed",))
    assert [(e["version"], e["point"], "unreadable" in e) for e in recorded] == [(0, False, True), (1, True, False)]


def test_markup_the_sink_wrote_into_a_commit_is_escaped_in_the_lanes() -> None:
    """A commit identifier (Paimon's, copied as given), an operation, a writer's name: the sink's to choose,
    never markup in the report."""
    from harness.report.swimlanes import swimlanes_svg

    markup = "<img src=x onerror=alert(1)>"
    events = [{"t": 1.0, "type": "scenario.start"},
              {"t": 2.0, "type": "table.committed", "version": 2, "batch": markup, "by": markup, "held": True,
               "operation": markup, "point": True},
              {"t": 3.0, "type": "table.committed", "version": 3, "batch": markup, "by": "txn", "point": False}]
    svg = swimlanes_svg(events, {}, {})
    assert "<img" not in svg and "&lt;img src=x onerror=alert(1)&gt;" in svg
