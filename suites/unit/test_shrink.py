"""Shrinking: the replay read back from a report, its smaller versions, the search (with a stand-in for
the cluster that fails by a rule) and the reproducer it writes. The real replays run in the chaos suite."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import BadInput
from harness.explore.shrink import Replay, reproducer, shrink

pytestmark = pytest.mark.unit

START = {"type": "scenario.start", "scenario": "x", "pipeline": "passthrough", "pipeline_spec": "passthrough",
         "sink": "bad_blind_commit_retry", "faults": ["kill:driver@txn.pre_commit#4", "kill:executor@batch.planned:3"],
         "state_store": "hdfs", "speculation": False, "partitions": 4, "rate": 0.0, "max_offsets_per_trigger": 4004,
         "workload": {"records": 20000, "seed": 1}}


def report(tmp_path: Path, start: dict) -> Path:
    (tmp_path / "history.jsonl").write_text(json.dumps(start) + "\n" + json.dumps({"type": "send"}) + "\n")
    return tmp_path


def test_a_replay_is_what_the_history_says_ran(tmp_path: Path) -> None:
    replay = Replay.from_report(report(tmp_path, START))
    assert replay == Replay("passthrough", "bad_blind_commit_retry", tuple(START["faults"]), 20000, 1, 4)
    assert replay.max_offsets_per_trigger is None  # the scenario's own for 20000 records: it follows the records
    older = Replay.from_report(report(tmp_path, {**START, "max_offsets_per_trigger": 4000}))
    assert older.max_offsets_per_trigger == 4000  # another split than today's is replayed as it ran
    with pytest.raises(BadInput, match="older harness"):
        Replay.from_report(report(tmp_path, {k: v for k, v in START.items() if k != "partitions"}))
    with pytest.raises(BadInput, match="not a scenario"):
        Replay.from_report(tmp_path / "nowhere")


def test_a_table_on_s3_is_replayed_on_s3_with_the_releases_it_ran_on(tmp_path: Path) -> None:
    start = {**START, "sink": "iceberg_streaming", "faults": ["drop:sender@catalog.commit#2"], "output": "iceberg",
             "store": "s3"}
    folder = report(tmp_path, start)
    (folder / "result.json").write_text(json.dumps({"versions": {"kafka": "4.1.1", "spark": "4.0.0",
                                                                 "iceberg": "1.11.0"}}))
    replay = Replay.from_report(folder)
    assert (replay.store, replay.spark, replay.iceberg) == ("s3", "4.0.0", "1.11.0")
    assert replay.options()["store"] == "s3" and replay.describe().endswith("into iceberg on s3")
    _, text = reproducer(SimpleNamespace(smallest=replay, original=replay, kinds=frozenset({"lost"})), folder)  # type: ignore[arg-type]
    assert "@pytest.mark.spark('4.0.0')\n@pytest.mark.iceberg('1.11.0')" in text and "store='s3'" in text


def test_smaller_versions_cut_faults_records_occurrences_and_partitions(tmp_path: Path) -> None:
    replay = Replay.from_report(report(tmp_path, START))
    smaller = dict(replay.smaller())
    assert smaller["without kill:driver@txn.pre_commit#4"].faults == ("kill:executor@batch.planned:3",)
    assert smaller["records 20000 -> 10000"].records == 10000
    earliest = smaller["kill:driver@txn.pre_commit#4 -> kill:driver@txn.pre_commit"]
    assert earliest.faults[0] == "kill:driver@txn.pre_commit"
    assert "kill:executor@batch.planned:3 -> kill:executor@batch.planned:2" in smaller
    assert smaller["partitions 4 -> 2"].partitions == 2
    tiny = Replay("p", "s", ("kill:driver@txn.commit",), 1500, 1, 1)
    assert tiny.smaller() == []


def test_without_the_first_fault_its_then_step_counts_from_the_start() -> None:
    pair = Replay("p", "s", ("kill:driver@txn.commit#2", "then kill:driver@txn.first_write#3"), 1500, 1, 1)
    smaller = dict(pair.smaller())
    assert smaller["without kill:driver@txn.commit#2"].faults == ("kill:driver@txn.first_write#3",)
    assert smaller["without then kill:driver@txn.first_write#3"].faults == ("kill:driver@txn.commit#2",)
    earlier = smaller["then kill:driver@txn.first_write#3 -> then kill:driver@txn.first_write"]
    assert earlier.faults[1] == "then kill:driver@txn.first_write"
    three = Replay("p", "s", ("kill:driver@txn.commit", "then kill:executor@produce", "then kill:driver@produce"),
                   1500, 1, 1)
    assert dict(three.smaller())["without then kill:executor@produce"].faults == (
        "kill:driver@txn.commit", "then kill:driver@produce")


def stand_in(rule, log: list[Replay]):
    """A cluster stand-in: a replay fails with `duplicate` when `rule` says so."""
    def run(replay: Replay, name: str) -> SimpleNamespace:
        log.append(replay)
        failed = rule(replay)
        anomalies = {"duplicate": SimpleNamespace(count=5)} if failed else {}
        return SimpleNamespace(outcome="fail" if failed else "pass", verdict=SimpleNamespace(anomalies=anomalies),
                               report_dir=Path(name))
    return run


def test_shrinks_to_the_smallest_replay_that_fails_twice(tmp_path: Path) -> None:
    original = Replay.from_report(report(tmp_path, START))
    log: list[Replay] = []
    # the bug needs the driver kill at its 2nd occurrence or later and at least 2500 records
    found = shrink(original, frozenset({"duplicate"}), stand_in(
        lambda r: any(f.startswith("kill:driver@txn.pre_commit#") for f in r.faults) and r.records >= 2500, log))
    assert found.status == "shrunk"
    assert found.smallest == Replay("passthrough", "bad_blind_commit_retry", ("kill:driver@txn.pre_commit#2",),
                                    2500, 1, 1)
    assert found.tried[0] == ("original", ["fail duplicate=5", "fail duplicate=5"])
    passed_once = [outcomes for _, outcomes in found.tried if outcomes[0] == "pass"]
    assert passed_once and all(len(o) == 1 for o in passed_once)  # a pass is not run a second time
    name, text = reproducer(found, tmp_path)
    assert name.startswith("test_repro_") and name.endswith(".py")
    tree = ast.parse(text)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [name.removesuffix(".py")]
    assert "faults=['kill:driver@txn.pre_commit#2']" in text and "records=2500" in text
    assert 'set(result.verdict.anomalies) == {"vacuous"}' in text  # a fix without the fault's point: skipped


def test_a_failure_that_does_not_come_back_twice_is_flaky(tmp_path: Path) -> None:
    original = Replay.from_report(report(tmp_path, START))
    calls: list[Replay] = []
    once = shrink(original, frozenset({"duplicate"}), stand_in(lambda r: len(calls) == 1, calls))
    assert once.status == "flaky" and once.smallest is None and len(once.replays) == 2
    never = shrink(original, frozenset({"duplicate"}), stand_in(lambda r: False, []))
    assert never.status == "flaky" and len(never.replays) == 1  # a pass is not replayed again


def test_a_failure_on_several_brokers_is_replayed_and_reproduced_on_as_many(tmp_path: Path) -> None:
    """A coordinator or ISR fault means nothing on one broker: the replays and the reproducer keep the count."""
    three = Replay.from_report(report(tmp_path, {**START, "faults": ["partition:followers@txn.first_write#2/30s"],
                                                 "brokers": 3}))
    assert three.brokers == 3 and all(r.brokers == 3 for _, r in three.smaller())
    assert three.describe().endswith("on 3 brokers")
    found = shrink(three, frozenset({"lost"}), lambda replay, name: SimpleNamespace(
        outcome="fail", verdict=SimpleNamespace(anomalies={"lost": SimpleNamespace(count=9)}), report_dir=Path(name)))
    _, text = reproducer(found, tmp_path)
    test = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef))
    assert "pytest.mark.brokers(3)" in [ast.unparse(d) for d in test.decorator_list]
    _, one = reproducer(shrink(Replay.from_report(report(tmp_path, START)), frozenset({"duplicate"}),
                               stand_in(lambda r: True, [])), tmp_path)
    assert "brokers" not in one  # an old history (no count) ran on one broker, the session's default


def test_a_failure_into_a_table_is_replayed_and_reproduced_into_the_same_output(tmp_path: Path) -> None:
    """A table sink's replays write a table too: into a topic they would be refused (its OUTPUT) or judge
    nothing; an old history (no output) ran into Kafka, the reproducer then says nothing of it."""
    table = Replay.from_report(report(tmp_path, {**START, "sink": "bad_delta_blind_append", "output": "delta"}))
    assert table.output == "delta" and all(r.output == "delta" for _, r in table.smaller())
    assert table.options()["output"] == "delta" and table.describe().endswith("into delta")
    found = shrink(table, frozenset({"duplicate"}), stand_in(lambda r: True, []))
    _, text = reproducer(found, tmp_path)
    calls = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)]
    call = next(n for n in calls if ast.unparse(n.func) == "eo_scenario")
    assert {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg == "output"} == {"output": "delta"}
    assert "output" not in Replay.from_report(report(tmp_path, START)).options()
