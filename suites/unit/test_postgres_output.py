"""A PostgreSQL table output, without a server: its table's name, the holds it reads from the server's
activity, its history (a batch written again told from a batch committed in parts; a state table's from
its change log: an idempotent repeat told from a batch applied twice), the commit point watched with the
holds settled and the writer's role named, and the bad-input messages (no rows where the harness looked,
a table without the columns the checkers need)."""

from __future__ import annotations

import pytest

from harness.checker.commits import batches_committed_twice
from harness.checker.repeats import repeats
from harness.client.records import Records
from harness.errors import BadInput
from harness.faults.space import Observation
from harness.history import History, read_history
from harness.output.postgres.table import Endpoint, PostgresTable, table_name
from harness.output.postgres.transactions import TransactionRows, batches_in_parts, changes_history, history
from harness.output.postgres.triggers import held_batches
from harness.output.postgres.watcher import HeldCommit, PostgresCommitWatcher
from harness.run.checkpoint import CheckpointFolder
from suites.unit.test_delta_output import StandInFiles
from suites.unit.test_table_commits import Settled

pytestmark = pytest.mark.unit
HARNESS = Endpoint("127.0.0.1", 32768, "eo", "eo_harness", "secret-h")
SINKS = Endpoint("postgres", 5432, "eo", "eo_sink", "secret-s")
CHECKPOINT = "/checkpoints/s"


def test_a_scenario_table_is_an_identifier_of_its_own() -> None:
    name = table_name("kill-driver-table.committed (Row 2)")
    assert name.startswith("out_kill_driver_table_committed_")
    assert len(f"{name}_hold_update") <= 63 and len(f"{name}_batches") <= 63
    assert table_name("a b") != table_name("a-b")  # the same readable part, another scenario


def test_a_held_writer_names_its_table_and_batches() -> None:
    assert held_batches("eo-hold out_x_1 3", "out_x_1") == (3,)
    assert held_batches("eo-hold out_x_1 3,4", "out_x_1") == (3, 4)
    assert held_batches("eo-hold out_y_2 3", "out_x_1") is None  # another scenario's table
    assert held_batches("PostgreSQL JDBC Driver", "out_x_1") is None
    assert held_batches("eo-hold out_x_1 3,²,٣", "out_x_1") == (3,)  # not ASCII digits: not a batch, nor an error


def test_history_names_a_batch_written_again_not_a_batch_committed_in_parts() -> None:
    # batch 1 in two transactions with disjoint rows (a commit per partition); batch 2 written twice
    rows = [(10, 1, 5, 1000, None), (11, 1, 5, 1001, None), (12, 2, 5, 2000, "q"), (20, 2, 5, 3000, None)]
    commits = history(rows, [(2, [12, 20])])
    assert [(c.version, c.batch, c.rows, c.app_id, c.repeats, c.said_by) for c in commits] == [
        (10, 1, 5, None, (), "batch_id"), (11, 1, 5, None, (), "batch_id"), (12, 2, 5, "q", (20,), "batch_id"),
        (20, 2, 5, None, (12,), "batch_id")]
    anomaly = batches_committed_twice(commits, {}, "transaction")
    assert anomaly is not None and anomaly.count == 1
    example = anomaly.examples[0]
    assert example["batch"] == 2 and example["versions"] == [12, 20] and example["rows"] == [5, 5]
    assert example["explanation"] == ("batch 2 was written 2 times: transactions 12, 20 committed the same rows "
                                      "(5, 5 rows)")
    assert batches_committed_twice(history(rows[:2], []), {}, "transaction") is None


def test_a_batch_whose_parts_were_each_written_again_is_named_part_by_part() -> None:
    # df.write.jdbc: partitions committed in 30 and 31, the replay wrote them again in 40 and 41
    rows = [(30, 2, 7, 0, None), (31, 2, 3, 0, None), (40, 2, 3, 0, None), (41, 2, 7, 0, None)]
    anomaly = batches_committed_twice(history(rows, [(2, [30, 41]), (2, [31, 40])]), {}, "transaction")
    assert anomaly is not None and anomaly.count == 2
    assert [e["versions"] for e in anomaly.examples] == [[30, 41], [31, 40]]
    assert [e["rows"] for e in anomaly.examples] == [[7, 7], [3, 3]]


def test_the_sink_is_told_where_to_write_as_the_sinks_role() -> None:
    import json

    fields = json.loads(json.dumps(PostgresTable(HARNESS, SINKS, "out_s_1").context()))  # as the driver gets it
    assert fields == {"jdbc_url": "jdbc:postgresql://postgres:5432/eo", "host": "postgres", "port": 5432,
                      "database": "eo", "user": "eo_sink", "password": "secret-s", "table": "out_s_1",
                      "batch_table": "out_s_1_batches"}
    from harness.driver.sink import SinkContext

    context = SinkContext("b:1", "t", "s", "/c", "m", "postgres", "", **fields)
    assert context.conninfo() == "host=postgres port=5432 dbname=eo user=eo_sink password=secret-s"
    assert context.jdbc_properties()["driver"] == "org.postgresql.Driver"


class Answers:
    """A stand-in connection: each execute's rows, in turn."""

    def __init__(self, *answers: list[tuple]) -> None:
        self.answers = list(answers)

    def execute(self, *_: object) -> Answers:
        self.rows = self.answers.pop(0)
        return self

    def fetchall(self) -> list[tuple]:
        return self.rows


def test_a_table_without_the_columns_the_checkers_need_names_them() -> None:
    table = PostgresTable(HARNESS, SINKS, "out_s_1")
    with pytest.raises(BadInput, match=r"has no column value, batch_id \(it has key, payload\)"):
        table._check_columns(Answers([("key",), ("payload",)]))
    with pytest.raises(BadInput, match="is gone"):
        table._check_columns(Answers([]))
    table._check_columns(Answers([("key",), ("value",), ("batch_id",), ("extra",)]))


def test_no_rows_names_where_the_harness_looked_and_what_else_the_sink_made() -> None:
    table = PostgresTable(HARNESS, SINKS, "out_s_1")
    said = table._nothing_written(Answers([("public.results",)]))
    assert "wrote no rows to PostgreSQL table out_s_1 in database eo (postgres:5432)" in said
    assert "the database also has public.results, which the harness did not make" in said
    assert "also has" not in table._nothing_written(Answers([]))


class StandInTable:
    """The server's holds as a list; releases recorded."""

    def __init__(self, held: list[HeldCommit]) -> None:
        self.holds = held
        self.released: list[int] = []
        self.stopped = False

    def held(self) -> list[HeldCommit]:
        return [h for h in self.holds if h.pid not in self.released]

    def release(self, pid: int) -> None:
        self.released.append(pid)

    def stop_holding(self) -> None:
        self.stopped = True


def test_a_held_commit_of_a_batch_spark_has_not_committed_is_the_point(tmp_path) -> None:  # type: ignore[no-untyped-def]
    files, settled = StandInFiles(), Settled()
    files.write(f"{CHECKPOINT}/commits/1", b"v1\n")
    history = History(tmp_path / "history.jsonl")
    table = StandInTable([HeldCommit(7, 100, (1,)), HeldCommit(8, 101, (2,))])
    roles = {7: "driver", 8: "executors"}  # the server processes the gate saw serve each peer's connection
    watcher = PostgresCommitWatcher(table, CheckpointFolder(files, CHECKPOINT), history, settled,  # type: ignore[arg-type]
                                    roles.__getitem__)
    watcher.poll()
    watcher.poll()  # a hold already told of is not told again
    assert [e["batch"] for e in settled.events] == [2] and settled.events[0]["version"] == 101
    assert table.released == [7]  # batch 1 was in Spark's commit log: not the point, let go at once
    settled.holds[0].release()
    assert table.released == [7, 8]
    watcher.stop()
    assert table.stopped
    history.close()
    events = read_history(tmp_path / "history.jsonl", ("table.committed",))
    assert [(e["version"], e["point"], e["role"]) for e in events] == [(100, False, "driver"), (101, True, "executors")]
    seen = Observation.from_events(events, stateful=False, output="postgres")
    assert seen.senders == {"table.committed": frozenset({"executors"})} and seen.kind == "table"
    assert watcher._role(9) == "unknown"  # a connection the gate never saw (it bypassed the gate)


def test_fetched_rows_become_a_partition_per_transaction_as_columns() -> None:
    """Offsets run on across fetches and interleavings within a transaction; a new transaction is the next
    partition; a null value is read as empty (`unreadable`), a null key stays null; each transaction's rows
    of each batch are counted for the history on the way."""
    rows = TransactionRows()
    first = rows.records([(7, "a", "1", 1000, 0), (7, "b", "2", 1000, 0), (9, None, "3", 2000, 1)])
    second = rows.records([(9, "c", None, 2000, 1), (12, "d", "4", None, 1), (7, "f", "6", 1000, 0),
                           (12, "e", "5", None, None)])
    assert type(first) is Records and rows.partitions == {7: 0, 9: 1, 12: 2}
    assert [(r.partition(), r.offset(), r.key(), r.value(), r.timestamp()[1]) for r in [*first, *second]] == [
        (0, 0, b"a", b"1", 1000), (0, 1, b"b", b"2", 1000), (1, 0, None, b"3", 2000), (1, 1, b"c", b"", 2000),
        (2, 0, b"d", b"4", 0), (0, 2, b"f", b"6", 1000), (2, 1, b"e", b"5", 0)]  # interleaved: offsets run on
    assert sorted(rows.commits({(7, 0): "q", (12, 1): "q"})) == [
        (7, 0, 3, 1000, "q"), (9, 1, 2, 2000, None), (12, 1, 1, None, "q")]


def test_only_a_batch_several_transactions_wrote_is_compared_for_repeats() -> None:
    rows = [(10, 0, 5, 0, "q"), (11, 1, 5, 0, "q"), (12, 1, 5, 0, None), (13, 2, 2, 0, None), (14, 2, 3, 0, "q"),
            (14, 3, 1, 0, "q")]
    assert batches_in_parts(rows) == [1, 2]
    assert batches_in_parts(rows[:2]) == []


def test_a_state_table_is_keyed_and_keeps_a_change_log_the_sinks_cannot_write() -> None:
    state, log = PostgresTable(HARNESS, SINKS, "out_s_1", state=True), PostgresTable(HARNESS, SINKS, "out_s_1")
    assert state.changes_table == "out_s_1_changes"
    made = [str(getattr(s, "_obj", s)) for s in state._change_log()]
    assert any("SECURITY DEFINER" in text for text in made)  # written as the harness, in the writer's transaction
    assert log.change_of(5) == ({}, {})  # a log table's rows are never rewritten: its history compares rows


def change(xid: int, batch: int | None, kind: str, key: str, before: str | None, after: str | None,
           ms: int = 0) -> tuple:
    return (xid, batch, kind, key, before, after, ms)


def test_a_state_table_s_history_is_its_change_log_one_commit_a_transaction_and_batch() -> None:
    """Commits in commit order (not the transactions' ids), each with what it did: a key's value before its
    first change and after its last; an insert had no row, a delete leaves none, both at once is no change."""
    rows = [change(20, 0, "I", "a", None, "1", 100), change(20, 0, "I", "b", None, "2", 100),
            change(19, 1, "U", "a", "1", "3", 200), change(19, 1, "U", "a", "3", "4", 200),
            change(19, None, "D", "b", "2", None, 200),
            change(21, 1, "I", "c", None, "5", 300), change(21, None, "D", "c", "5", None, 300)]
    commits, changes = changes_history(rows, {(20, 0): "q"})
    assert [(c.version, c.batch, c.rows, c.operation, c.app_id, c.said_by) for c in commits] == [
        (20, 0, 2, "INSERT", "q", "batch_id"), (19, 1, 3, "DELETE, UPDATE", None, "batch_id"),
        (21, 1, 2, "DELETE, INSERT", None, "batch_id")]
    assert changes[20] == ({b"a": [], b"b": []}, {b"a": [b"1"], b"b": [b"2"]})
    assert changes[19] == ({b"a": [b"1"], b"b": [b"2"]}, {b"a": [b"4"], b"b": []})
    assert changes[21] == ({}, {})


def test_a_replayed_upsert_that_sets_is_an_idempotent_repeat_one_that_adds_is_applied_twice() -> None:
    """What the store records tells them apart: the replay's transaction rewrote the batch's rows, and its
    change log says whether it changed them."""
    first = [change(10, 2, "U", "a", "1", "4", 100), change(10, 2, "I", "b", None, "2", 100)]
    sets = [change(11, 2, "U", "a", "4", "4", 200), change(11, 2, "U", "b", "2", "2", 200)]
    adds = [change(11, 2, "U", "a", "4", "7", 200), change(11, 2, "U", "b", "2", "4", 200)]
    commits, changes = changes_history(first + sets, {})
    found = repeats(commits, {}, lambda xid: changes[xid], "transaction")
    assert not found.applied_twice.count
    assert found.idempotent[0]["explanation"] == ("batch 2 was committed again in transaction 11 (first in 10) "
                                                  "without changing any row: an idempotent repeat")
    commits, changes = changes_history(first + adds, {})
    found = repeats(commits, {}, lambda xid: changes[xid], "transaction")
    example = found.applied_twice.examples[0]
    assert (example["batch"], example["versions"], example["keys_changed_again"]) == (2, [10, 11], 2)
    assert example["explanation"] == ("batch 2 was applied twice: transactions 10, 11; transaction 11 changed 2 keys "
                                      "again (e.g. key a: 4 -> 7)")
    assert found.by_key["b"] == "batch 2 was applied twice: transactions 10, 11; transaction 11 changed this key again"


def test_a_batch_upserted_in_parts_is_not_applied_twice() -> None:
    """One transaction a partition, each writing other keys: parts of one write, not a second."""
    parts = [change(10, 2, "U", "a", "1", "4", 100), change(11, 2, "U", "b", "2", "5", 110)]
    commits, changes = changes_history(parts, {})
    found = repeats(commits, {}, lambda xid: changes[xid], "transaction")
    assert not found.applied_twice.count and not found.idempotent
