"""A table's commit point, `table.committed:N`: a new version of the table holding batch N appeared (a
Delta log entry, an Iceberg metadata file, a Paimon snapshot) while Spark's `commits/N` does not exist
yet, watched through the relay like the checkpoint (harness.run.checkpoint). PostgreSQL's transactions
are watched by their own store (harness.output.postgres.watcher).

A version's batch is the one it names (Delta's `txn` action, a streaming sink's epoch id in Delta's
commit info or an Iceberg snapshot's summary, Paimon's commit identifier), else, for a version that adds
or removes data (not a CREATE TABLE), the batch Spark was running when it committed: the last one
planned before the commit's time (the version's commit time against Spark's `batchTimestampMs` in
`offsets/N`, both the driver's clock; batch N+1 is planned only after batch N committed, and a re-run
keeps its batch's time). That holds however late the harness looks. A rewrite (a compaction, OPTIMIZE) holds
no batch and is never the point. The writer is held at each commit
until the watcher answers: the driver's JVM stopped where the table is on the run's volume
(harness.driver.table_hold), the commit's answer held at the gate where it is on object storage (the
server applied it, the client waits), so the point's fault lands before Spark can write its commit log; a
version whose batch Spark had committed by then (a hold said late, under load) is recorded but is not the
point.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from harness.driver.table_hold import RELEASE_AFTER_S
from harness.gate.catalog_requests import CATALOG_COMMIT
from harness.gate.http_points import HttpAnswer
from harness.gate.points import GateEvent, Hold
from harness.gate.s3_requests import S3_PUT
from harness.history import History
from harness.output.commits import Commit, TableCorrupt
from harness.run.checkpoint import CheckpointFolder, whole_number
from harness.run.poller import Poller

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


class Holds(Protocol):
    """Where a table's writer is held at each new version until the watcher answers."""

    lasts_s: float  # a hold lets go by itself after this long

    def look(self) -> None:
        """See what is held now; OSError when the relay does not answer."""

    def take(self, version: int) -> Callable[[], None] | None:
        """The release of a new version's hold, once it is said (None until then)."""

    def rest(self, seen: set[int], whole: bool) -> None:
        """Release the holds no new version took: said late, of a version already `seen`; or, once a look
        recorded every version it found (`whole`), a commit that made none."""

    def committed(self) -> set[int]:
        """The batches of Spark's commit log the hold saw appear (none where nothing beside the driver
        watches it); OSError when the relay does not answer."""


class DriverHolds:
    """The driver's holds (harness.driver.table_hold): `<token>-<version>.held` said in a folder on the
    volume, answered by a `.release` beside it."""

    lasts_s = RELEASE_AFTER_S

    def __init__(self, files: _Files, folder: str) -> None:
        self.files = files
        self.folder = folder
        self.answered: set[str] = set()
        self._said: dict[int, str] = {}

    def look(self) -> None:
        said = [name for name in self.files.walk(self.folder) if name.endswith(".held")]
        # a name of another form is no hold of the driver's
        self._said = {version: name for name in said if name not in self.answered
                      if (version := whole_number(name.removesuffix(".held").rpartition("-")[2])) is not None}

    def take(self, version: int) -> Callable[[], None] | None:
        name = self._said.pop(version, None)
        if name is None:
            return None
        self.answered.add(name)
        return lambda: self._release(name)

    def rest(self, seen: set[int], whole: bool) -> None:
        for version, name in self._said.items():
            if version in seen:
                self.answered.add(name)
                self._release(name)

    def committed(self) -> set[int]:
        """Each driver's hold writes the commit log's batches down as they appear (`<token>.commits`): read
        from root's folder, where the sink cannot undo them as it can rename Spark's own files."""
        batches: set[int] = set()
        for name in self.files.walk(self.folder):
            if name.endswith(".commits"):
                lines = self.files.read_text(f"{self.folder}/{name}").splitlines()
                batches.update(batch for line in lines if (batch := whole_number(line)) is not None)
        return batches

    def _release(self, name: str) -> None:
        self.files.write(f"{self.folder}/{name.removesuffix('.held')}.release", b"")


class GateHolds:
    """A table's commits held at the gate (harness.gate.http_proxy) where it lives on object storage: each
    answer of an `s3.put` or `catalog.commit` the server applied is held (the schedule's interceptor asks
    `wants`, then `add`s it) until the watcher has recorded the version it made. A table's commits come
    one at a time, so what is held when a look begins made the versions that look finds; the first new
    version recorded takes it. Out of the sink's reach: nothing in Spark can answer for the gate. As the
    driver's own hold, each lets go by itself after RELEASE_AFTER_S: a watcher that stopped answering never
    stalls the stream."""

    lasts_s = RELEASE_AFTER_S

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[Hold] = []
        self._looked: list[Hold] = []

    @staticmethod
    def wants(event: GateEvent) -> bool:
        """An applied commit's answer (2xx), held for the watcher."""
        return (event.point in (S3_PUT, CATALOG_COMMIT) and isinstance(event.request, HttpAnswer)
                and 200 <= event.request.status < 300)

    def add(self, hold: Hold) -> None:
        """Called on the gate's loop, where the hold's own time limit is set."""
        hold.loop.call_later(self.lasts_s, hold.release)
        with self._lock:
            self._open.append(hold)

    def look(self) -> None:
        with self._lock:
            self._looked = list(self._open)

    def take(self, version: int) -> Callable[[], None] | None:
        taken = self._claim()
        if not taken:
            return None

        def release() -> None:
            for hold in taken:
                hold.release()
        return release

    def rest(self, seen: set[int], whole: bool) -> None:
        if whole:
            for hold in self._claim():
                hold.release()

    @staticmethod
    def committed() -> set[int]:
        """Nothing beside the driver watches its commit log (the checkpoint is listed instead)."""
        return set()

    def _claim(self) -> list[Hold]:
        """What the last look saw, no longer open."""
        taken, self._looked = self._looked, []
        with self._lock:
            self._open = [hold for hold in self._open if hold not in taken]
        return taken


class TableHold:
    """A table version at its commit point, handed to the fault; what the nemesis settles
    (harness.gate.proxy.Held). The commit is in the log whatever happens, so dropping it is releasing it:
    the writer goes on, unless the fault killed it first. `release`: the hold's (None when it was not
    held). Settling it first runs `landed`, which checks that the fault came before Spark's commit."""

    def __init__(self, release: Callable[[], None] | None, version: int, landed: Callable[[], None]) -> None:
        self._release = release
        self.what = f"table version {version}" + ("" if release else " (not held)")
        self.landed = landed

    def release(self) -> None:
        self.landed()
        if self._release is not None:
            self._release()

    def drop(self) -> None:
        self.release()


class TableWatcher:
    """Polls a table's log (and its holds) and records each new version in the history as a
    `table.committed` event; `on_commit(event, hold)` is told of each version that is the point (its
    batch not yet in Spark's commit log), and must settle the hold; the others are released here."""

    def __init__(self, log: TableLog, holds: Holds | None, folder: CheckpointFolder, history: History,
                 on_commit: Callable[[dict, TableHold], None], interval: float = 0.05) -> None:
        """`holds`: how the writer is held at each version (None where it is not)."""
        self.log = log
        self.holds = holds
        self.folder = folder
        self.history = history
        self.on_commit = on_commit
        self.seen: set[int] = set()
        self.attributed: dict[int, int] = {}  # version -> the batch Spark ran when it committed (it named none)
        self._planned_ms: dict[int, int] = {}
        self._first_seen: dict[int, float] = {}
        self._poller = Poller("table-watcher", interval, self.poll)

    def start(self) -> TableWatcher:
        self._poller.start()
        return self

    def stop(self) -> None:
        self._poller.stop()
        self.poll(final=True)

    def poll(self, final: bool = False) -> None:
        try:
            if self.holds is not None:
                self.holds.look()  # before the listing: what is held now made versions the listing finds
            found = self.log.versions_now()
        except OSError:  # the relay is gone: the run is ending
            return
        now = time.monotonic()
        whole = True
        for version in found:
            if version in self.seen:
                continue
            release = self.holds.take(version) if self.holds is not None else None
            waited = now - self._first_seen.setdefault(version, now)
            if release is None and self.holds is not None and not final and version > 0 and waited < HELD_WITHIN_S:
                whole = False
                break  # its hold is being said: wait for it, and keep the versions in order
            if not self._observed(version, release):
                whole = False
                break  # the relay did not answer: looked at again next time
            self.seen.add(version)
        if self.holds is not None:
            self.holds.rest(self.seen, whole)

    def _observed(self, version: int, release: Callable[[], None] | None) -> bool:
        """Record a version (and settle its hold); False when the relay did not answer (it is let go). A
        version that cannot be parsed (the sink writes the table: anything may be there) is recorded as
        unreadable, holding no batch, and the watcher goes on to the next."""
        seen = time.monotonic()
        held = release is not None
        try:
            commit = self.log.commit(version)
            listing = self.folder.listing()
        except TableCorrupt as corrupt:  # a version naming a file that is gone: recorded, its batch unknown
            self.history.record(POINT, version=version, batch=None, by="", held=held, point=False,
                                missing=corrupt.missing)
            if release is not None:
                release()
            return True
        except OSError:
            if release is not None:
                release()
            return False
        except Exception as error:  # noqa: BLE001 - what the sink wrote can be anything: never the watcher's end
            self.history.record(POINT, version=version, batch=None, by="", held=held, point=False,
                                unreadable=f"{type(error).__name__}: {str(error)[:200]}")
            if release is not None:
                release()
            return True
        planned, committed = self.folder.planned(listing), self.folder.committed(listing)
        batch, by = commit.batch, commit.said_by
        # a version of no data (CREATE TABLE) holds no batch, nor does a rewrite (a compaction moves rows)
        if batch is None and (commit.added or commit.removed) and not commit.rewrite:
            batch, by = self._running_at(commit.timestamp_ms, planned), "running"
            if batch is not None:
                self.attributed[version] = batch
        point = batch is not None and batch not in committed
        event = self.history.record(POINT, version=version, batch=batch, by=by, app_id=commit.app_id,
                                    operation=commit.operation, held=held, point=point,
                                    **({"rewrite": True} if commit.rewrite else {}))
        if batch is not None and point:
            point_batch = batch
            self.on_commit(event, TableHold(release, version, lambda: self._landed(version, point_batch, held, seen)))
        elif release is not None:
            release()
        return True

    def _landed(self, version: int, batch: int, held: bool, seen: float) -> None:
        """Whether the fault at a version came before Spark committed its batch, checked as the fault settles
        the point (its effect done: the writer still held, or gone). A batch committed by then means the
        driver went on while held (a hold undone from inside it: the sink can signal its own JVM), or, not
        held, outran the fault: `point.missed`, and the row did not try what it says. Past a hold's own
        time limit the writer went on by design: nothing to say."""
        if held and self.holds is not None and time.monotonic() - seen > self.holds.lasts_s - RELEASE_MARGIN_S:
            return
        try:
            committed = {*self.folder.committed(self.folder.listing()),
                         *(self.holds.committed() if self.holds is not None else ())}
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
