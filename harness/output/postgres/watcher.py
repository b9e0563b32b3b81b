"""PostgreSQL's commit point, `table.committed:N`: a transaction that wrote rows of batch N committed, its
writer held before it heard (harness.output.postgres.table), while Spark's `commits/N` does not exist yet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from harness.history import History
from harness.run.checkpoint import CheckpointFolder
from harness.run.poller import Poller
from harness.run.table_watch import POINT


@dataclass(frozen=True)
class HeldCommit:
    """A writer held right after its commit: its backend, its transaction and the batches it wrote."""

    pid: int
    xid: int | None
    batches: tuple[int, ...]


class HeldTable(Protocol):
    """The table as its watcher asks it (harness.output.postgres.table.PostgresTable)."""

    def held(self) -> list[HeldCommit]: ...

    def release(self, pid: int) -> None: ...

    def stop_holding(self) -> None: ...


class PostgresHold:
    """A PostgreSQL writer held right after its commit (harness.output.postgres.table); settled like a TableHold:
    the transaction is committed whatever happens, so dropping it is releasing it."""

    def __init__(self, table: HeldTable, held: HeldCommit) -> None:
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

    def __init__(self, table: HeldTable, folder: CheckpointFolder, history: History,
                 on_commit: Callable[[dict, PostgresHold], None], role_of: Callable[[int], str] = lambda _: "driver",
                 interval: float = 0.02) -> None:
        """`role_of`: the role (driver, executors) of the container whose connection a server process (a
        held writer's `pid`) serves; KeyError where it is not known."""
        self.table = table
        self.role_of = role_of
        self.folder = folder
        self.history = history
        self.on_commit = on_commit
        self.attributed: dict[int, int] = {}  # every transaction names its batch (its rows' batch_id)
        self.seen: set[tuple[int, int | None]] = set()
        self._poller = Poller("postgres-commit-watcher", interval, self.poll)

    def start(self) -> PostgresCommitWatcher:
        self._poller.start()
        return self

    def stop(self) -> None:
        self._poller.stop()
        self.table.stop_holding()

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
