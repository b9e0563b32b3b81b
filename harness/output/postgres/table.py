"""A PostgreSQL table as an output: prepared by the harness (a table for the rows, one for the batches a
sink committed), read after the run in a transaction of its own, with each row's batch id and the
transaction that wrote it (the `xmin` system column) as the store's commit history (made from the rows in
harness.output.postgres.transactions).

The client is psycopg 3 (`psycopg[binary]`: libpq and a C row parser in one wheel, for CPython 3.11 on
manylinux), not pg8000 (pure Python): reading is the hot path (a million rows in benchmarks/scale.py).
Measured here, reading this module's query over a million rows (about 80 MB of values, the server's sort
included, on a loaded two-core machine): psycopg 12.8 s and 19.5 s, pg8000 1.31.6 33.7 s and 45.9 s,
and pg8000's native `run` holds every row in memory where psycopg streams them from a named (server-side)
cursor. psycopg's `COPY` support also gives the reference sinks their fast write. Both are maintained;
the wheel is the price (a few MB, in the images too).

Commit holds (the `table.committed` point): the server names a synchronous standby that never connects
(harness/output/postgres/image/start-postgres.sh), and the harness's trigger on the rows' table (its SQL:
harness.output.postgres.triggers) asks, inside each transaction that writes rows, for a synchronous
commit (`synchronous_commit = on`, for that transaction only) and names the batches it wrote in
`application_name`. Such a transaction commits (its commit record is written, it is committed on the
server), then waits for the standby before its client hears: the writer is held right after its commit,
whoever it is (the driver in `foreachBatch`, an executor's task in `df.write.jdbc`). The harness sees the
wait in `pg_stat_activity`, fires what the point triggers, then lets it go (`pg_cancel_backend`: the
client gets its commit, with a warning).

A state table (the sink's `TABLE = "state"`: one row per key, `key` its primary key, kept by an upsert
`ON CONFLICT` or a `MERGE`) is overwritten in place: a row's `xmin` names only its last writer, and a
replay that rewrites a batch's rows leaves no second transaction among them. So the harness keeps a
change log beside it (`<table>_changes`, written by its trigger in the writer's own transaction, rolled
back with it, out of the sinks' reach): each row a transaction inserted, updated or deleted, with its
value before and after and the batch id written. Its commits are the history, and what each one did
tells an idempotent repeat from a double application (harness.checker.repeats).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.client.reader import ReadResult, collector_paused, feeding
from harness.client.records import Record, Records
from harness.errors import BadInput, InfrastructureError
from harness.output.base import EngineSource, Hold, OnCommit, Watcher
from harness.output.commits import Commit, State
from harness.output.postgres.transactions import TransactionRows, batches_in_parts, changes_history, history
from harness.output.postgres.triggers import (
    CHANGE_FUNCTION,
    CHANGES,
    HOLD_EVENTS,
    HOLD_FUNCTION,
    HOLD_PREFIX,
    held_batches,
)
from harness.output.postgres.watcher import HeldCommit, PostgresCommitWatcher

if TYPE_CHECKING:
    from harness.history import History
    from harness.run.checkpoint import CheckpointFolder
    from harness.run.table_watch import GateHolds

COLUMNS = ("key", "value", "batch_id")  # what the checkers and the history read of a row
BATCH = 10_000  # rows handed to the checker at once (and fetched from the server at once)
# the read is one plain scan of the table in its physical (ctid) order, so that rows stream at once, unsorted
# (a transaction's rows in that order are in the order it inserted them): no parallel workers, no scan
# joining another one midway; the history's aggregate (of the batches several transactions wrote) in memory
READ_SETTINGS = ("SET LOCAL max_parallel_workers_per_gather = 0", "SET LOCAL synchronize_seqscans = off",
                 "SET LOCAL work_mem = '512MB'")
HELD = "SyncRep"  # pg_stat_activity.wait_event of a backend waiting for the (absent) synchronous standby


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom to connect: the harness's view (the published port) or the sinks' (the route
    inside the network)."""

    host: str
    port: int
    database: str
    user: str
    password: str

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def conninfo(self) -> str:
        """A libpq connection string (psycopg's)."""
        return (f"host={self.host} port={self.port} dbname={self.database} user={self.user} "
                f"password={self.password} connect_timeout=10")


def table_name(scenario: str) -> str:
    """A scenario's table: its name made an identifier (lower case, at most 63 bytes with the suffixes
    `_batches` and `_hold_update`)."""
    readable = re.sub(r"[^a-z0-9_]+", "_", scenario.lower()).strip("_")[:30]
    return f"out_{readable}_{hashlib.sha256(scenario.encode()).hexdigest()[:8]}"


class PostgresTable:
    """The scenario's table (the context's `table`, `batch_table` and connection fields)."""

    name = "postgres"
    unit = "transaction"  # what one of its commits is, in explanations
    ordered = False  # a table keeps no row order: its files' rows are not judged for a key's sequence
    keyed = False  # its log table's commits append rows (a state table is the sink's to declare)

    def __init__(self, harness: Endpoint, sinks: Endpoint, table: str, state: bool = False,
                 role_of: Callable[[int], str] = lambda _: "driver") -> None:
        """`state`: the sink keeps a state table (one row per key): `key` is made its primary key, and a
        change log is kept beside it. `role_of`: the role (driver, executors) of the container a server
        process serves (the gate knows: harness.gate.proxy), KeyError where it is not known."""
        self.harness = harness
        self.role_of = role_of
        self.sinks = sinks
        self.table = table
        self.state = state
        self.batch_table = f"{table}_batches"
        self.changes_table = f"{table}{CHANGES}"
        self.where = f"table {table} in database {harness.database} ({sinks.host}:{sinks.port})"
        self.xids: list[int] = []  # partition (a transaction's rows) -> its transaction id
        self._history: list[Commit] | None = None
        self._changes: dict[int, tuple[State, State]] = {}  # a state table's: transaction -> what it did
        self._control = None  # the connection the holds are watched and settled on, opened once

    def _connect(self, autocommit: bool = True):  # type: ignore[no-untyped-def]
        """A new connection as the harness; the server not answering is the infrastructure's failure."""
        import psycopg

        try:
            return psycopg.connect(self.harness.conninfo(), autocommit=autocommit)
        except psycopg.OperationalError as error:
            raise InfrastructureError(f"PostgreSQL at {self.harness.host}:{self.harness.port} cannot be reached: "
                                      f"{str(error).strip().splitlines()[0]}") from None

    @contextmanager
    def _connection(self, autocommit: bool = True) -> Iterator:  # type: ignore[type-arg]
        with self._connect(autocommit) as connection:
            yield connection

    def prepare(self) -> None:
        """The rows' table and the batches' table, owned by the sinks' role, with the hold trigger (and for
        a state table, its change log, the harness's own); a table already there is refused (each scenario
        writes a table of its own)."""
        from psycopg import sql

        table, batches = sql.Identifier(self.table), sql.Identifier(self.batch_table)
        key = " PRIMARY KEY" if self.state else ""
        with self._connection() as connection:
            if connection.execute("SELECT to_regclass(%s)", (self.table,)).fetchone()[0] is not None:
                raise BadInput(f"PostgreSQL {self.where} already exists: each scenario writes a table of its own")
            statements = [
                sql.SQL("CREATE TABLE {} (key text" + key + ", value text, batch_id bigint)").format(table),
                sql.SQL("CREATE TABLE {} (query_id text NOT NULL, batch_id bigint NOT NULL, "
                        "PRIMARY KEY (query_id, batch_id))").format(batches),
                sql.SQL(HOLD_FUNCTION),
                *[sql.SQL("CREATE TRIGGER {} AFTER " + event + " ON {} REFERENCING NEW TABLE AS written "
                          "FOR EACH STATEMENT EXECUTE FUNCTION eo_hold_commit()").format(
                              sql.Identifier(f"{self.table}_hold_{event.lower()}"), table)
                  for event in HOLD_EVENTS],
                *[sql.SQL("ALTER TABLE {} OWNER TO {}").format(name, sql.Identifier(self.sinks.user))
                  for name in (table, batches)],
                *(self._change_log() if self.state else []),
            ]
            with connection.transaction():
                for statement in statements:
                    connection.execute(statement)

    def _change_log(self) -> list:  # type: ignore[type-arg]
        """A state table's change log and the trigger that writes it (as the harness: the sinks' role can
        neither write nor read it)."""
        from psycopg import sql

        return [sql.SQL("CREATE TABLE {} (seq bigserial PRIMARY KEY, kind char(1) NOT NULL, key text, before text, "
                        "after text, batch_id bigint)").format(sql.Identifier(self.changes_table)),
                sql.SQL(CHANGE_FUNCTION),
                sql.SQL("CREATE TRIGGER {} AFTER INSERT OR UPDATE OR DELETE ON {} FOR EACH ROW "
                        "EXECUTE FUNCTION eo_log_change()").format(
                            sql.Identifier(f"{self.table}_log"), sql.Identifier(self.table))]

    def context(self) -> dict[str, object]:
        return {"jdbc_url": self.sinks.jdbc_url, "host": self.sinks.host, "port": self.sinks.port,
                "database": self.sinks.database, "user": self.sinks.user, "password": self.sinks.password,
                "table": self.table, "batch_table": self.batch_table}

    def spark_settings(self) -> dict[str, str]:
        return {}

    def engine_source(self) -> EngineSource | None:
        return None

    def hold(self) -> Hold | None:
        return None  # a writer is held by the server, at its commit (HOLD_FUNCTION)

    def watch(self, folder: CheckpointFolder, history: History, on_commit: OnCommit,
              at_gate: GateHolds | None) -> Watcher | None:
        return PostgresCommitWatcher(self, folder, history, on_commit, self.role_of).start()

    def _controlling(self):  # type: ignore[no-untyped-def]
        """The holds' connection, opened once (again if it broke): the watcher polls on it, the schedule's
        threads release on it (a psycopg connection serializes its users)."""
        if self._control is None or self._control.closed:
            self._control = self._connect()
        return self._control

    def held(self) -> list[HeldCommit]:
        """The writers of this table held right after their commit, oldest first."""
        rows = self._controlling().execute(
            "SELECT pid, backend_xid::text, application_name FROM pg_stat_activity "
            "WHERE wait_event = %s AND application_name LIKE %s ORDER BY xact_start",
            (HELD, f"{HOLD_PREFIX} {self.table} %")).fetchall()
        found = []
        for pid, xid, application_name in rows:
            batches = held_batches(application_name, self.table)
            if batches is not None:
                found.append(HeldCommit(pid, int(xid) if xid else None, batches))
        return found

    def release(self, pid: int) -> None:
        """Let a held writer go: its commit returns (it was committed already); a writer gone is no matter."""
        self._controlling().execute(
            "SELECT pg_cancel_backend(%s) FROM pg_stat_activity WHERE pid = %s AND wait_event = %s", (pid, pid, HELD))

    def stop_holding(self, within_s: float = 10.0) -> None:
        """No more holds: the trigger off, every writer still held let go (a held transaction is invisible
        to readers until it is), waited for."""
        import time

        from psycopg import sql

        with self._connection() as connection, connection.transaction():
            for event in HOLD_EVENTS:  # the change log goes on: a batch may still be writing
                connection.execute(sql.SQL("ALTER TABLE IF EXISTS {} DISABLE TRIGGER {}").format(
                    sql.Identifier(self.table), sql.Identifier(f"{self.table}_hold_{event.lower()}")))
        deadline = time.monotonic() + within_s
        while held := self.held():
            if time.monotonic() > deadline:
                raise InfrastructureError(f"PostgreSQL: {len(held)} writers of {self.table} still held after "
                                          f"{within_s:g} s (backends {', '.join(str(h.pid) for h in held)})")
            for commit in held:
                self.release(commit.pid)
            time.sleep(0.05)
        if self._control is not None:
            self._control.close()

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """Every committed row, read in one repeatable-read transaction: a transaction's rows are one
        partition, a row's place among them (insert order) its offset, its transaction's commit time its
        timestamp."""
        records = Records()
        with self._connection(autocommit=False) as connection:
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            for setting in READ_SETTINGS:
                connection.execute(setting)
            self._check_columns(connection)
            transactions = TransactionRows()
            # the checker works on a thread of its own while the next rows are fetched (psycopg waits for
            # the server without the GIL)
            with connection.cursor(name="eo_read") as cursor, collector_paused(), feeding(on_batch) as feed:
                cursor.itersize = BATCH
                cursor.execute(self._query(
                    "SELECT xmin::text::bigint AS xid, key, value, "
                    "(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::bigint, batch_id "
                    "FROM {}"))
                while rows := cursor.fetchmany(BATCH):
                    batch = transactions.records(rows)
                    records.extend(batch)
                    feed(batch)  # type: ignore[arg-type]  # Records: the checkers take its columns as they are
            if not transactions.partitions:
                raise BadInput(self._nothing_written(connection))
            self.xids = list(transactions.partitions)
            self._history = self._changed(connection) if self.state else self._commits(connection, transactions)
        ends = dict.fromkeys(range(len(transactions.partitions)), 0)
        for partition in records.partitions:
            ends[partition] += 1
        return ReadResult(records, ends, dict(ends))

    def _query(self, text: str):  # type: ignore[no-untyped-def]
        from psycopg import sql

        return sql.SQL(text).format(sql.Identifier(self.table))

    def _check_columns(self, connection) -> None:  # type: ignore[no-untyped-def]
        names = [row[0] for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
            "ORDER BY ordinal_position", (self.table,)).fetchall()]
        if not names:
            raise BadInput(f"PostgreSQL {self.where} is gone (the sink dropped it?): write the context's table, "
                           "as it is made (key text, value text, batch_id bigint)")
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise BadInput(f"PostgreSQL {self.where} has no column {', '.join(missing)} (it has {', '.join(names)}): "
                           "the checkers read `key` and `value` (text), the commit history `batch_id` (the "
                           "foreachBatch batch id)")

    def _nothing_written(self, connection) -> str:  # type: ignore[no-untyped-def]
        """Why an empty table is bad input, naming where the harness looked and what else the sink made."""
        others = [row[0] for row in connection.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_name NOT LIKE 'out\\_%%'"
            ).fetchall()]
        elsewhere = f"; the database also has {', '.join(sorted(others))}, which the harness did not make" if others \
            else ""
        return (f"the sink wrote no rows to PostgreSQL {self.where} (looked in {self.table} as {self.harness.user}, "
                f"in a transaction of its own after the run){elsewhere}: write to the context's table")

    def _commits(self, connection, transactions: TransactionRows) -> list[Commit]:  # type: ignore[no-untyped-def]
        """The history: each (transaction, batch) with its rows and commit time (counted by the read) and the
        batch row it wrote."""
        rows = transactions.commits(self._query_ids(connection))
        repeats = []
        if parted := batches_in_parts(rows):  # only a batch several transactions wrote can repeat its rows
            repeats = connection.execute(self._query(
                "SELECT batch_id, array_agg(DISTINCT xid ORDER BY xid) FROM ("
                "  SELECT batch_id, key, value, xmin::text::bigint AS xid FROM {} WHERE batch_id = ANY(%s)) r "
                "GROUP BY batch_id, key, value HAVING count(DISTINCT xid) > 1"), (parted,)).fetchall()
        return history([tuple(row) for row in rows], [(batch, list(xids)) for batch, xids in repeats])

    def _query_ids(self, connection) -> dict[tuple[int, int], str | None]:  # type: ignore[no-untyped-def]
        """The query id of each batch row, by the transaction that wrote it and its batch."""
        from psycopg import sql

        return {(xid, batch): query_id for xid, batch, query_id in connection.execute(sql.SQL(
            "SELECT xmin::text::bigint, batch_id, min(query_id) FROM {} GROUP BY 1, 2").format(
                sql.Identifier(self.batch_table))).fetchall()}

    def _changed(self, connection) -> list[Commit]:  # type: ignore[no-untyped-def]
        """A state table's history from its change log (harness.output.postgres.transactions.changes_history)."""
        from psycopg import sql

        rows = connection.execute(sql.SQL(
            "SELECT xmin::text::bigint, batch_id, kind, key, before, after, "
            "(extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1000)::bigint FROM {} ORDER BY seq").format(
                sql.Identifier(self.changes_table))).fetchall()
        commits, self._changes = changes_history(rows, self._query_ids(connection))
        return commits

    def commits(self) -> list[Commit]:
        """The history read with the rows (in the same transaction); empty before the read."""
        return self._history or []

    def commit_of(self, partition: int) -> int | None:
        return self.xids[partition]

    def file_of(self, partition: int) -> str | None:
        return None

    def change_of(self, version: int) -> tuple[State, State]:
        """What a transaction did to a state table, from its change log ({} and {} for a log table: its
        rows are never rewritten, and its history compares the rows themselves)."""
        return self._changes.get(version, ({}, {}))
