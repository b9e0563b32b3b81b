"""A PostgreSQL table output, without a server: its table's name, the holds it reads from the server's
activity, its history (a batch written again told from a batch committed in parts), the commit point
watched with the holds settled, and the bad-input messages (no rows where the harness looked, a table
without the columns the checkers need)."""

from __future__ import annotations

import pytest

from harness.checker.commits import batches_committed_twice
from harness.client.records import Records
from harness.errors import BadInput
from harness.faults.space import Observation
from harness.history import History, read_history
from harness.output.postgres import (
    Endpoint,
    HeldCommit,
    PostgresTable,
    TransactionRows,
    batches_in_parts,
    held_batches,
    history,
    table_name,
)
from harness.run.checkpoint import CheckpointFolder
from harness.run.table_watch import PostgresCommitWatcher
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
    arguments = PostgresTable(HARNESS, SINKS, "out_s_1").sink_arguments()
    assert arguments[0] == "--postgres"
    import json

    fields = json.loads(arguments[1])
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
    table = StandInTable([HeldCommit(7, 100, (1,), "10.0.0.5"), HeldCommit(8, 101, (2,), "10.0.0.7")])
    roles = {"10.0.0.5": "driver", "10.0.0.7": "executors"}
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
