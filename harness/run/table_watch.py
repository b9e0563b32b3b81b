"""The table output's commit point, `table.committed:N`: a new Delta version holding batch N appeared
while Spark's `commits/N` does not exist yet (watched through the relay, like the checkpoint:
harness.run.checkpoint); or a PostgreSQL transaction that wrote rows of batch N committed, its writer
held before it heard (harness.output.postgres), while Spark's `commits/N` does not exist yet.

A version's batch is the one its log entry names (a `txn` action, Spark's sink's `epochId`), else, for a
version that adds or removes data (not a CREATE TABLE), the batch Spark was running when it committed:
the last one planned before the commit's time (Delta's `commitInfo.timestamp` against Spark's
`batchTimestampMs` in `offsets/N`, both the driver's clock; batch N+1 is planned only after batch N
committed, and a re-run keeps its batch's time). That holds however
late the harness looks. The driver is held at each commit (harness.driver.table_hold: the JVM stopped
until answered), so the point's fault lands before Spark can write its commit log; a version whose
batch Spark had committed by then (a hold said late, under load) is recorded but is not the point.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from harness.driver.table_hold import holds_folder
from harness.history import History
from harness.output.delta.log import DeltaLog, versions
from harness.output.postgres.table import HeldCommit, PostgresTable
from harness.run.checkpoint import CheckpointFolder, whole_number

POINT = "table.committed"
HELD_WITHIN_S = 2.0  # a new version's hold is said this soon after it, or it came before the driver held


class _Files(Protocol):
    """The relay's files as this watcher uses them (harness.gate.relay_files.RelayFiles)."""

    def walk(self, path: str) -> list[str]: ...

    def read_bytes(self, path: str) -> bytes: ...

    def read_text(self, path: str) -> str: ...

    def write(self, path: str, data: bytes) -> None: ...


class TableHold:
    """A driver held at a table commit; what the nemesis settles (harness.gate.proxy.Held). The commit
    is in the log whatever happens, so dropping it is releasing it: the JVM goes on, unless the fault
    killed it first."""

    def __init__(self, files: _Files, said: str, version: int) -> None:
        self.files = files
        self.said = said
        self.what = f"table version {version}"

    def release(self) -> None:
        self.files.write(self.said.removesuffix(".held") + ".release", b"")

    def drop(self) -> None:
        self.release()


class TableWatcher:
    """Polls a table's log (and its holds) and records each new version in the history as a
    `table.committed` event; `on_commit(event, hold)` is told of each version that is the point (its
    batch not yet in Spark's commit log), and must settle the hold; the others are released here."""

    def __init__(self, files: _Files, table: str, folder: CheckpointFolder, history: History,
                 on_commit: Callable[[dict, TableHold], None], interval: float = 0.05) -> None:
        self.files = files
        self.log = DeltaLog(files, table)  # type: ignore[arg-type]
        self.holds = holds_folder(table)
        self.folder = folder
        self.history = history
        self.on_commit = on_commit
        self.interval = interval
        self.seen: set[int] = set()
        self.answered: set[str] = set()
        self.attributed: dict[int, int] = {}  # version -> the batch Spark ran when it committed (it named none)
        self._planned_ms: dict[int, int] = {}
        self._first_seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table-watcher", daemon=True)

    def start(self) -> TableWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.poll(final=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self, final: bool = False) -> None:
        try:
            found = versions(self.log.listing())
            said = [name for name in self.files.walk(self.holds) if name.endswith(".held")]
        except OSError:  # the relay is gone: the run is ending
            return
        # `<token>-<version>.held`; a name of another form is no hold of the driver's
        holds = {version: name for name in said if name not in self.answered
                 if (version := whole_number(name.removesuffix(".held").rpartition("-")[2])) is not None}
        now = time.monotonic()
        for version in found:
            if version in self.seen:
                continue
            hold_name = holds.pop(version, None)
            waited = now - self._first_seen.setdefault(version, now)
            if hold_name is None and not final and version > 0 and waited < HELD_WITHIN_S:
                break  # its hold is being said: wait for it, and keep the versions in order
            hold = None
            if hold_name is not None:
                self.answered.add(hold_name)
                hold = TableHold(self.files, f"{self.holds}/{hold_name}", version)
            if not self._observed(version, hold):
                break  # the relay did not answer: looked at again next time
            self.seen.add(version)
        for version, name in holds.items():  # holds said late, of versions already recorded unheld
            if version in self.seen:
                self.answered.add(name)
                self.files.write(f"{self.holds}/{name.removesuffix('.held')}.release", b"")

    def _observed(self, version: int, hold: TableHold | None) -> bool:
        """Record a version (and settle its hold); False when the relay did not answer (it is let go)."""
        try:
            commit = self.log.commit(version)
            listing = self.folder.listing()
        except OSError:
            if hold is not None:
                hold.release()
            return False
        planned, committed = self.folder.planned(listing), self.folder.committed(listing)
        batch, by = commit.batch, commit.said_by
        if batch is None and (commit.added or commit.removed):  # a version of no data (CREATE TABLE) holds no batch
            batch, by = self._running_at(commit.timestamp_ms, planned), "running"
            if batch is not None:
                self.attributed[version] = batch
        point = batch is not None and batch not in committed
        event = self.history.record(POINT, version=version, batch=batch, by=by, app_id=commit.app_id,
                                    operation=commit.operation, held=hold is not None, point=point)
        if point and hold is not None:
            self.on_commit(event, hold)
        elif point:
            self.on_commit(event, _NoHold())
        elif hold is not None:
            hold.release()
        return True

    def _running_at(self, committed_ms: int, planned: list[int]) -> int | None:
        """The last batch planned at or before a commit's time (None when none was, or times are unknown)."""
        for batch in reversed(planned):
            if batch not in self._planned_ms:
                at = self.folder.planned_at_ms(batch)
                if at is None:
                    continue
                self._planned_ms[batch] = at
            if self._planned_ms[batch] <= committed_ms:
                return batch
        return None


class _NoHold:
    """A version seen without its driver held (no step at the point): nothing to settle."""

    what = "table version (not held)"

    def release(self) -> None:
        """Nothing held."""

    def drop(self) -> None:
        """Nothing held."""


class PostgresHold:
    """A PostgreSQL writer held right after its commit (harness.output.postgres); settled like a TableHold:
    the transaction is committed whatever happens, so dropping it is releasing it."""

    def __init__(self, table: PostgresTable, held: HeldCommit) -> None:
        self.table = table
        self.pid = held.pid
        self.what = f"transaction {held.xid} (batch {', '.join(map(str, held.batches))})"

    def release(self) -> None:
        self.table.release(self.pid)

    def drop(self) -> None:
        self.release()


class PostgresCommitWatcher:
    """Polls the server for writers of the table held at their commit and records each as a
    `table.committed` event (its `version` the transaction id); `on_commit(event, hold)` is told of each
    that is the point (its batch not yet in Spark's commit log) and must settle the hold; the others are
    released here. On stop, every hold left is released and the table holds no more."""

    def __init__(self, table: PostgresTable, folder: CheckpointFolder, history: History,
                 on_commit: Callable[[dict, PostgresHold], None], role_of: Callable[[int], str] = lambda _: "driver",
                 interval: float = 0.02) -> None:
        """`role_of`: the role (driver, executors) of the container whose connection a server process (a
        held writer's `pid`) serves; KeyError where it is not known."""
        self.table = table
        self.role_of = role_of
        self.folder = folder
        self.history = history
        self.on_commit = on_commit
        self.interval = interval
        self.attributed: dict[int, int] = {}  # every transaction names its batch (its rows' batch_id)
        self.seen: set[tuple[int, int | None]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="postgres-commit-watcher", daemon=True)

    def start(self) -> PostgresCommitWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.table.stop_holding()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def _role(self, pid: int) -> str:
        try:
            return self.role_of(pid)
        except Exception:  # noqa: BLE001 - a connection that bypassed the gate: the role is evidence, not the point
            return "unknown"

    def poll(self) -> None:
        try:
            held = [h for h in self.table.held() if (h.pid, h.xid) not in self.seen]
            if not held:
                return
            committed = self.folder.committed(self.folder.listing())
        except OSError:  # the relay or the server is gone: the run is ending
            return
        except Exception as error:  # noqa: BLE001 - psycopg's errors: the next poll tries again
            self.history.record("table.watch_error", error=f"{type(error).__name__}: {error}")
            return
        for commit in held:
            self.seen.add((commit.pid, commit.xid))
            batch = min(commit.batches) if commit.batches else None
            point = batch is not None and batch not in committed
            hold = PostgresHold(self.table, commit)
            event = self.history.record(POINT, version=commit.xid, batch=batch, batches=list(commit.batches),
                                        by="rows", held=True, point=point, role=self._role(commit.pid))
            if point:
                self.on_commit(event, hold)
            else:
                hold.release()
