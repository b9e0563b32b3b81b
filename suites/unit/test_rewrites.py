"""A commit that only moves rows (a compaction, OPTIMIZE, clustering) is recognised from what each format
records about it, holds no batch (never a second commit of one, never attributed to the batch Spark ran),
and is judged only for leaving the table with the rows it found."""

from __future__ import annotations

import pytest

from harness.checker.commits import batches_committed_twice
from harness.checker.rewrites import NAME, rewrites_that_changed_rows
from harness.checker.verdict import EXACTLY_ONCE, FAIL, NONE, PASS, Verdict, with_anomaly
from harness.history import History, read_history
from harness.output.commits import Commit
from harness.output.delta.log import parse_commit
from suites.unit.test_delta_output import StandInFiles, add, entry, log_path
from suites.unit.test_table_commits import Settled, batches, committed_at, watcher

pytestmark = pytest.mark.unit


def optimize(*paths: str, removed: tuple[str, ...] = ("a.parquet", "b.parquet")) -> bytes:
    """An OPTIMIZE (or auto-compaction) entry as Delta writes it: every action `dataChange: false`."""
    return entry({"commitInfo": {"timestamp": 2500, "operation": "OPTIMIZE",
                                 "operationParameters": {"predicate": "[]", "auto": True}}},
                 *({"remove": {"path": p, "dataChange": False}} for p in removed),
                 *(add(p, dataChange=False) for p in paths))


def test_delta_s_optimize_is_a_rewrite_and_a_write_is_not() -> None:
    assert parse_commit(3, optimize("c.parquet").decode()).rewrite
    write = parse_commit(2, entry(add("a.parquet"), {"txn": {"appId": "s", "version": 2}}).decode())
    assert not write.rewrite and write.batch == 2
    # a write of new rows marked dataChange false beside one that is not is not a rewrite
    mixed = entry(add("a.parquet", dataChange=False), add("b.parquet"))
    assert not parse_commit(4, mixed.decode()).rewrite
    assert not parse_commit(5, entry(committed_at(1)).decode()).rewrite  # no file: nothing moved


def test_a_rewrite_carrying_a_batch_id_holds_no_batch() -> None:
    """Paimon's compaction carries the identifier of the commit it followed; a rewrite never holds its batch."""
    assert Commit(7, "COMPACT", epoch=3, named_by="commitIdentifier", rewrite=True).batch is None


def test_compaction_after_a_batch_s_write_is_not_a_second_commit_of_it() -> None:
    history = [Commit(0, "WRITE", app_id="s", txn_version=0), Commit(1, "OPTIMIZE", rewrite=True),
               Commit(2, "WRITE", app_id="s", txn_version=1), Commit(3, "OPTIMIZE", rewrite=True)]
    assert batches_committed_twice(history, {1: 0, 3: 1}) is None  # even where a watcher had attributed them
    again = [*history, Commit(4, "WRITE", app_id="s", txn_version=1)]
    anomaly = batches_committed_twice(again, {})
    assert anomaly is not None and anomaly.examples[0]["versions"] == [2, 4]


def test_the_watcher_attributes_no_batch_to_a_compaction_and_holds_no_point_there(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    history = History(tmp_path / "history.jsonl")
    watch = watcher(files, history, settled)
    batches(files, [0, 1, 2], [0, 1])
    files.write(log_path(0), entry(add("a.parquet"), committed_at(500)))
    files.write(log_path(1), optimize("c.parquet", removed=("a.parquet",)))
    watch.poll(final=True)
    assert watch.attributed == {0: 0}  # the OPTIMIZE at 2.5 s, while batch 2 ran, is not batch 2's
    history.close()
    recorded = read_history(tmp_path / "history.jsonl", ("table.committed",))
    assert [(e["version"], e["batch"], e["point"], e.get("rewrite")) for e in recorded] == [
        (0, 0, False, None), (1, None, False, True)]


def states(*tables: dict) -> dict[int, tuple[dict, dict]]:
    """version -> (the table before, after) for tables given one per version from version 1."""
    return {v: (tables[v - 1], tables[v]) for v in range(1, len(tables))}


def test_a_rewrite_that_moves_rows_passes_and_one_that_drops_or_doubles_rows_is_named() -> None:
    table = {b"k1": [b"v1", b"v2"], b"k2": [b"v3"]}
    moved = {b"k2": [b"v3"], b"k1": [b"v2", b"v1"]}
    changes = states(table, moved, {b"k1": [b"v1", b"v2", b"v2"], b"k2": []})
    commits = [Commit(1, "OPTIMIZE", rewrite=True), Commit(2, "OPTIMIZE", rewrite=True)]
    anomaly = rewrites_that_changed_rows(commits[:1], changes.__getitem__, "table version")
    assert anomaly is None
    anomaly = rewrites_that_changed_rows(commits, changes.__getitem__, "table version")
    assert anomaly is not None and anomaly.count == 2 and anomaly.name == NAME
    example = anomaly.examples[0]
    assert (example["version"], example["rows_before"], example["rows_after"]) == (2, 3, 3)
    assert example["dropped"] == [{"key": "k2", "value": "v3"}] and example["added"] == [{"key": "k1", "value": "v2"}]
    assert example["explanation"].startswith("table version 2 (OPTIMIZE) only moves rows by its own record")
    failed = with_anomaly(Verdict(PASS, EXACTLY_ONCE, {}, 3, 3, 3), anomaly)
    assert failed.outcome == FAIL and failed.guarantee == NONE


def test_a_write_is_never_read_as_a_rewrite() -> None:
    """Only commits the format records as rewrites are compared: a batch's write changes rows by design."""
    def change_of(version: int) -> tuple[dict, dict]:
        raise AssertionError("a write's change is not read")
    assert rewrites_that_changed_rows([Commit(1, "WRITE", txn_version=0)], change_of, "table version") is None
