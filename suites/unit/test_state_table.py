"""State tables (one row per key, kept by an upsert or MERGE): each key's row against its final value
(the model's, the reference's), a batch committed twice told apart by what its later commit did to the
table (an idempotent repeat, or a double application whose versions and keys are named), and how a
sink says it keeps one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.catalog.pipelines import running_totals
from harness.checker.repeats import changed, repeats, with_idempotent_repeats
from harness.checker.state_table import StateTableCheck
from harness.checker.verdict import EFFECTIVELY_ONCE, EXACTLY_ONCE, FAIL, PASS, UNKNOWN, Verdict
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord
from harness.errors import BadInput
from harness.history import History, read_history
from harness.output.base import holds_folder
from harness.output.commits import Commit
from harness.output.delta.table import DeltaTable
from harness.run.checkpoint import CheckpointFolder
from harness.run.table_watch import DriverHolds, TableWatcher
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline
from suites.unit.test_delta_output import TABLE, StandInFiles, add, entry, log_path, parquet

pytestmark = pytest.mark.unit
READ = ReadResult([], {}, {})


def total(user: str, count: int, cents: int) -> bytes:
    return json.dumps({"user": user, "count": count, "total_cents": cents}).encode()


def rows(*values: tuple[str, bytes]) -> list[OutputRecord]:
    """A table's rows, one a file (partition), as the Delta output reads them."""
    return [OutputRecord(n, 0, key.encode(), value) for n, (key, value) in enumerate(values)]


def model_check() -> StateTableCheck:
    """running_totals' model over a's 2 transactions and b's 1: a's final total is a@2, b's b@1."""
    from harness.run.oracles import ModelOracle

    inputs = [{"key": "a", "amount": 1.0}, {"key": "b", "amount": 2.5}, {"key": "a", "amount": 0.25}]

    class Sent:
        def was_acked(self, n: int) -> bool:
            return True

    oracle = ModelOracle(load_pipeline("running_totals"))
    oracle._expected = lambda workload, sends: running_totals.model(inputs)  # type: ignore[method-assign]
    return oracle.state_check(None, Sent(), None)  # type: ignore[arg-type, return-value]


def judged(check: StateTableCheck, table: list[OutputRecord], incomplete: dict | None = None) -> Verdict:
    check.feed(table)
    return check.verdict(READ, incomplete)


def test_each_key_s_row_holding_its_final_result_passes() -> None:
    verdict = judged(model_check(), rows(("a", total("a", 2, 125)), ("b", total("b", 1, 250))))
    assert (verdict.outcome, verdict.guarantee, verdict.expected, verdict.observed) == (PASS, EXACTLY_ONCE, 2, 2)


def test_a_row_added_to_twice_is_a_wrong_value_with_the_key_the_expected_and_the_found() -> None:
    """One row per key: a double application shows nowhere but in the value."""
    verdict = judged(model_check(), rows(("a", total("a", 3, 225)), ("b", total("b", 1, 250))))
    assert verdict.outcome == FAIL and set(verdict.anomalies) == {"wrong_value"}
    example = verdict.anomalies["wrong_value"].examples[0]
    assert (example["key"], example["expected"], example["expected_value"], example["found"]) == ("a", "a@2", 125,
                                                                                                   "a@3")
    assert "225" in example["value"]


def test_the_right_count_with_the_wrong_total_is_caught_by_the_pipeline_s_own_value_check() -> None:
    verdict = judged(model_check(), rows(("a", total("a", 2, 999)), ("b", total("b", 1, 250))))
    assert set(verdict.anomalies) == {"wrong_value"}
    example = verdict.anomalies["wrong_value"].examples[0]
    assert (example["id"], example["expected"], example["got"]) == ("a@2", 125, 999)


def test_a_missing_key_an_unknown_key_two_rows_of_a_key_and_an_unreadable_row() -> None:
    verdict = judged(model_check(), rows(("a", total("a", 2, 125)), ("a", total("a", 2, 125)),
                                         ("c", total("c", 1, 5))))
    assert {n: a.count for n, a in verdict.anomalies.items()} == {"duplicate": 1, "lost": 1, "unexpected": 1}
    assert verdict.anomalies["lost"].examples[0] == {"key": "b", "expected": "b@1", "expected_value": 250}
    assert verdict.anomalies["duplicate"].examples[0]["reason"] == "a state table keeps one row per key"
    broken = judged(model_check(), rows(("a", b"not json"), ("b", total("b", 1, 250))))
    assert set(broken.anomalies) == {"unreadable"} and broken.guarantee == "none"


def test_an_incomplete_run_counts_only_rows_that_cannot_be_right() -> None:
    """A key's row may rightly hold an earlier total when the input was not all consumed."""
    verdict = judged(model_check(), rows(("a", total("a", 1, 100)), ("a", total("a", 1, 100))),
                     {"reason": "stalled"})
    assert set(verdict.anomalies) == {"duplicate", "incomplete"}


def test_a_crashed_value_check_is_unknown_never_a_pass() -> None:
    def crash(records: list, identities: list) -> dict:
        raise RuntimeError("checker bug")

    check = StateTableCheck({"a": "a@1"}, lambda value: "a@1", "model", crash)
    verdict = judged(check, rows(("a", b"x")))
    assert verdict.outcome == UNKNOWN and "checker bug" in (verdict.error or "")


def test_against_the_reference_each_key_s_row_is_its_last_update_byte_for_byte() -> None:
    check = StateTableCheck({"a": b"v2", "b": b"w1"}, bytes, "differential")
    verdict = judged(check, rows(("a", b"v2"), ("b", b"w0")))
    assert verdict.oracle == "differential" and set(verdict.anomalies) == {"wrong_value"}
    assert verdict.anomalies["wrong_value"].examples[0]["expected"] == "w1"


def test_a_pipeline_with_several_final_results_a_key_cannot_be_a_state_table() -> None:
    from harness.client.workload import Workload
    from harness.run.oracles import ModelOracle

    class Sent:
        def was_acked(self, n: int) -> bool:
            return True

    with pytest.raises(BadInput, match="several final results for key .*one row per key"):
        ModelOracle(load_pipeline("passthrough")).state_check(Workload(50), Sent(), None)  # type: ignore[arg-type]


def commit(version: int, batch: int | None = None) -> Commit:
    return Commit(version, "MERGE", txn_version=batch, added=(f"v{version}.parquet",))


def snapshots(states: dict[int, dict]) -> Callable[[int], tuple[dict, dict]]:
    """A Delta-like store's `change_of`: the table as of the version before and as of the version."""
    return lambda version: (states.get(version - 1, {}), states[version])


def test_a_batch_committed_again_without_changing_a_row_is_an_idempotent_repeat() -> None:
    states = {2: {b"a": [b"1"]}, 3: {b"a": [b"1"]}}
    found = repeats([commit(2, 2), commit(3, 2)], {}, snapshots(states))
    assert not found.applied_twice.count and found.idempotent[0]["versions"] == [2, 3]
    assert "idempotent repeat" in found.idempotent[0]["explanation"]
    passed = Verdict(PASS, EXACTLY_ONCE, {}, 1, 1, 1)
    assert with_idempotent_repeats(passed, found).guarantee == EFFECTIVELY_ONCE


def test_a_batch_applied_again_names_its_versions_and_the_keys_it_changed() -> None:
    states = {2: {b"a": [b"1"], b"b": [b"5"]}, 3: {b"a": [b"2"], b"b": [b"5"]}}
    found = repeats([commit(2), commit(3), commit(4, 3)], {2: 2, 3: 2}, snapshots(states))
    assert found.applied_twice.count == 1 and not found.idempotent
    example = found.applied_twice.examples[0]
    assert (example["batch"], example["versions"], example["keys_changed_again"]) == (2, [2, 3], 1)
    assert example["changed_again"] == [{"key": "a", "before": "1", "after": "2"}]
    said = "batch 2 was applied twice: table versions 2, 3; table version 3 changed"
    assert example["explanation"].startswith(f"{said} 1 key")
    assert found.by_key == {"a": f"{said} this key again"}


def test_changed_keys_between_two_versions() -> None:
    assert changed({b"a": [b"1"], b"b": [b"2"]}, {b"a": [b"1"], b"b": [b"3"], b"c": [b"4"]}) == {
        b"b": ([b"2"], [b"3"]), b"c": ([], [b"4"])}
    assert changed({b"a": [b"1", b"2"]}, {b"a": [b"2", b"1"]}) == {}  # the rows' order is not a change


def test_the_table_as_of_a_version_is_read_from_the_log_up_to_it() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(add("p0.parquet")))
    files.write(log_path(1), entry({"remove": {"path": "p0.parquet"}}, add("p1.parquet")))
    files.write(f"{TABLE}/p0.parquet", parquet(["a", "b"], ["1", "2"]))
    files.write(f"{TABLE}/p1.parquet", parquet(["a", "b"], ["3", "2"]))
    table = DeltaTable(files, TABLE)
    assert table.state_at(0) == {b"a": [b"1"], b"b": [b"2"]}
    assert table.state_at(1) == {b"a": [b"3"], b"b": [b"2"]}


def test_a_version_that_changes_no_data_holds_no_batch(tmp_path: Path) -> None:
    """A MERGE sink's CREATE TABLE comes while Spark runs its first batch: were it attributed to it, the
    batch's MERGE would make it look committed twice."""
    files = StandInFiles()
    files.write("/checkpoints/s/offsets/0", b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0}\n{}\n')
    files.write(log_path(0), entry({"commitInfo": {"timestamp": 10, "operation": "CREATE TABLE"}}, {"metaData": {}}))
    files.write(log_path(1), entry({"commitInfo": {"timestamp": 20, "operation": "MERGE"}}, add("a.parquet")))
    history = History(tmp_path / "history.jsonl")
    watch = TableWatcher(DeltaTable(files, TABLE), DriverHolds(files, holds_folder(TABLE)),
                         CheckpointFolder(files, "/checkpoints/s"), history, lambda e, h: h.release())
    watch.poll(final=True)
    history.close()
    assert watch.attributed == {1: 0}
    events = read_history(tmp_path / "history.jsonl", ("table.committed",))
    assert [(e["version"], e["batch"], e["point"]) for e in events] == [(0, None, False), (1, 0, True)]


def test_a_sink_says_it_keeps_a_state_table(tmp_path: Path) -> None:
    assert resolve_sink("delta_merge_txn").table == "state"
    assert resolve_sink("bad_delta_merge_adds_twice").table == "state"
    assert resolve_sink("delta_foreach_batch_txn").table == "log"  # the default: every result appended
    odd = tmp_path / "odd_sink.py"
    odd.write_text('OUTPUT = "delta"\nTABLE = "upsert"\n\ndef sink(frame, context):\n    return frame.writeStream\n')
    with pytest.raises(BadInput, match="TABLE = 'upsert' is not one of log, state"):
        _ = resolve_sink(f"{odd}:sink").table


def test_a_state_table_sink_into_a_topic_is_refused(tmp_path: Path) -> None:
    from harness.run.session import scenario

    upsert = tmp_path / "upsert_sink.py"
    upsert.write_text('TABLE = "state"\n\ndef sink(frame, context):\n    return frame.writeStream\n')
    with pytest.raises(BadInput, match="keeps a state table .*only a table output is judged as one .delta, hudi, "):
        scenario(None, "x", pipeline="running_totals", sink=f"{upsert}:sink", output="kafka")  # type: ignore[arg-type]


def test_a_state_table_sink_into_postgres_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.run import session

    made: list[tuple] = []
    monkeypatch.setattr(session, "Scenario", lambda *arguments: made.append(arguments))
    monkeypatch.setattr(session, "oracle_for", lambda cluster, pipeline: None)
    upsert = tmp_path / "upsert_sink.py"
    upsert.write_text('OUTPUT = "postgres"\nTABLE = "state"\n\ndef sink(frame, context):\n    return None\n')
    session.scenario(None, "x", pipeline="running_totals", sink=f"{upsert}:sink", output="postgres")  # type: ignore[arg-type]
    assert made and made[0][-4:-1] == ("postgres", "volume", None) and made[0][3].table == "state"
