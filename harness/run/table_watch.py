"""A table's commit point, `table.committed:N`: a new version of the table holding batch N appeared (a
Delta log entry, an Iceberg metadata file, a Paimon snapshot) while Spark's `commits/N` does not exist
yet, watched through the relay like the checkpoint (harness.run.checkpoint). PostgreSQL's transactions
are watched by their own store (harness.output.postgres.watcher).

A version's batch is the one it names (Delta's `txn` action, a streaming sink's epoch id in Delta's
commit info or an Iceberg snapshot's summary, Paimon's commit identifier), else, for a version that adds
or removes data (not a CREATE TABLE), the batch Spark was running when it committed: the last one
planned before the commit's time (the version's commit time against Spark's `batchTimestampMs` in
`offsets/N`, both the driver's clock; batch N+1 is planned only after batch N committed, and a re-run
keeps its batch's time). That holds however late the harness looks. The driver is held at each commit
(harness.driver.table_hold: the JVM stopped until answered), so the point's fault lands before Spark can
write its commit log; a version whose batch Spark had committed by then (a hold said late, under load)
is recorded but is not the point.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from harness.driver.table_hold import RELEASE_AFTER_S
from harness.history import History
from harness.output.commits import Commit, TableCorrupt
from harness.run.checkpoint import CheckpointFolder, whole_number

POINT = "table.committed"
HELD_WITHIN_S = 2.0  # a new version's hold is said this soon after it, or it came before the driver held
RELEASE_MARGIN_S = 5.0  # a hold this near its own time limit may have let go by itself


class _Files(Protocol):
    """The relay's files as this watcher uses them (harness.gate.relay_files.RelayFiles)."""

    def walk(self, path: str) -> list[str]: ...

    def read_bytes(self, path: str) -> bytes: ...

    def read_text(self, path: str) -> str: ...

    def write(self, path: str, data: bytes) -> None: ...


class TableLog(Protocol):
    """A table's versions as its watcher reads them (a Delta log, Iceberg's metadata, Paimon's snapshots)."""

    def versions_now(self) -> list[int]:
        """The versions committed so far, in order; OSError when the relay does not answer."""

    def commit(self, version: int) -> Commit:
        """What one version did; OSError when the relay does not answer."""


class TableHold:
    """A table version at its commit point, handed to the fault; what the nemesis settles
    (harness.gate.proxy.Held). The commit is in the log whatever happens, so dropping it is releasing it:
    the JVM goes on, unless the fault killed it first. `said`: the driver's hold file (None when it was
    not held). Settling it first runs `landed`, which checks that the fault came before Spark's commit."""

    def __init__(self, files: _Files, said: str | None, version: int, landed: Callable[[], None]) -> None:
        self.files = files
        self.said = said
        self.what = f"table version {version}" + ("" if said else " (not held)")
        self.landed = landed

    def release(self) -> None:
        self.landed()
        if self.said is not None:
            self.files.write(self.said.removesuffix(".held") + ".release", b"")

    def drop(self) -> None:
        self.release()


class TableWatcher:
    """Polls a table's log (and its holds) and records each new version in the history as a
    `table.committed` event; `on_commit(event, hold)` is told of each version that is the point (its
    batch not yet in Spark's commit log), and must settle the hold; the others are released here."""

    def __init__(self, files: _Files, log: TableLog, holds: str | None, folder: CheckpointFolder, history: History,
                 on_commit: Callable[[dict, TableHold], None], interval: float = 0.05) -> None:
        """`holds`: the folder the driver says its holds in (harness.driver.table_hold); None where it is not
        held (a table on object storage: no folder to watch)."""
        self.files = files
        self.log = log
        self.holds = holds
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
            found = self.log.versions_now()
            said = [name for name in self.files.walk(self.holds) if name.endswith(".held")] if self.holds else []
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
            if hold_name is None and self.holds and not final and version > 0 and waited < HELD_WITHIN_S:
                break  # its hold is being said: wait for it, and keep the versions in order
            if hold_name is not None:
                self.answered.add(hold_name)
            if not self._observed(version, hold_name and f"{self.holds}/{hold_name}"):
                break  # the relay did not answer: looked at again next time
            self.seen.add(version)
        for version, name in holds.items():  # holds said late, of versions already recorded unheld
            if version in self.seen:
                self.answered.add(name)
                self.files.write(f"{self.holds}/{name.removesuffix('.held')}.release", b"")

    def _observed(self, version: int, said: str | None) -> bool:
        """Record a version (and settle its hold, `said`); False when the relay did not answer (it is let go)."""
        seen = time.monotonic()
        try:
            commit = self.log.commit(version)
            listing = self.folder.listing()
        except TableCorrupt as corrupt:  # a version naming a file that is gone: recorded, its batch unknown
            self.history.record(POINT, version=version, batch=None, by="", held=said is not None, point=False,
                                missing=corrupt.missing)
            if said is not None:
                self._release(said)
            return True
        except OSError:
            if said is not None:
                self._release(said)
            return False
        planned, committed = self.folder.planned(listing), self.folder.committed(listing)
        batch, by = commit.batch, commit.said_by
        if batch is None and (commit.added or commit.removed):  # a version of no data (CREATE TABLE) holds no batch
            batch, by = self._running_at(commit.timestamp_ms, planned), "running"
            if batch is not None:
                self.attributed[version] = batch
        point = batch is not None and batch not in committed
        event = self.history.record(POINT, version=version, batch=batch, by=by, app_id=commit.app_id,
                                    operation=commit.operation, held=said is not None, point=point)
        if batch is not None and point:
            point_batch = batch
            self.on_commit(event, TableHold(self.files, said, version,
                                            lambda: self._landed(version, point_batch, said is not None, seen)))
        elif said is not None:
            self._release(said)
        return True

    def _release(self, said: str) -> None:
        self.files.write(said.removesuffix(".held") + ".release", b"")

    def _landed(self, version: int, batch: int, held: bool, seen: float) -> None:
        """Whether the fault at a version came before Spark committed its batch, checked as the fault settles
        the point (its effect done: the driver still held, or gone). A batch committed by then means the
        driver went on while held (a hold undone from inside it: the sink can signal its own JVM), or, not
        held, outran the fault: `point.missed`, and the row did not try what it says. Past the hold's own
        time limit the driver went on by design: nothing to say."""
        if held and time.monotonic() - seen > RELEASE_AFTER_S - RELEASE_MARGIN_S:
            return
        try:
            committed = self.folder.committed(self.folder.listing())
        except OSError:  # the relay is gone: the run is ending
            return
        if batch in committed:
            self.history.record("point.missed", version=version, batch=batch, held=held,
                                why=f"Spark committed batch {batch} before the fault at table version {version} "
                                    f"took effect" + (": the driver went on while held" if held else ""))

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
