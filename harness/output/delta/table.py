"""A Delta table as an output: the latest committed snapshot, read from the table's log, never from a
listing of its data files (a file a failed or zombie writer left behind is not in the table).

Reading is done here with pyarrow on the files the log names, fetched through the relay; not with
delta-rs (`deltalake`): the harness reaches the volume only through the relay's file service, so
delta-rs would need a local copy of the log and the files anyway, and the history's evidence (each
version's `txn` action, which delta-rs's history does not give) needs the log parsed here regardless.
One parser for both keeps the snapshot and the evidence consistent, and pyarrow alone reads a key and a
value column of a Parquet file in C (no JVM, no Spark batch job in a container: seconds saved per run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.base import EngineSource, Hold, OnCommit, Watcher, holds_folder
from harness.output.commits import Commit, Files, State, decoded, table_file
from harness.output.delta import deletion_vectors
from harness.output.delta.log import LOG, VERSION_FILE, DeltaLog, Snapshot, versions
from harness.output.rows import file_rows, read_files

if TYPE_CHECKING:
    from harness.history import History
    from harness.run.checkpoint import CheckpointFolder
    from harness.run.table_watch import GateHolds


# Delta Lake's SQL extension and catalog (its jars are in the image): a session needs them for Delta's
# commands (MERGE, DESCRIBE HISTORY) and its catalog tables; format("delta") alone would not.
SESSION = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
           "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}


def table_path(checkpoint: str) -> str:
    """Where a scenario's table lives: beside its checkpoint, on the volume drivers and executors share."""
    return f"{checkpoint}-table"


class DeltaTable:
    """The scenario's table (the context's `table_path`): at `path` of `files` (the run's volume through the
    relay, or its S3 server's bucket), which Spark names `uri` with `settings` of its own (S3A's, through the
    gate; `direct`: the same past it, for the harness's own read by Spark)."""

    name = "delta"
    unit = "table version"  # what one of its commits is, in explanations
    ordered = False  # a table keeps no row order: its files' rows are not judged for a key's sequence
    keyed = False  # its log table's commits append rows (a state table is the sink's to declare)

    def __init__(self, files: Files, path: str, uri: str | None = None, settings: dict[str, str] | None = None,
                 direct: dict[str, str] | None = None) -> None:
        self.files = files
        self.where = path
        self.uri = uri or path
        self.settings = settings or {}
        self.direct = direct or {}
        self.log = DeltaLog(files, path)
        self.versions: list[int] = []  # partition (a file of the snapshot) -> the version that added it
        self.paths: list[str] = []  # partition -> its data file, where the files are (harness.output.commits.Files)
        self._history: list[Commit] | None = None

    def prepare(self) -> None:
        """Nothing to make (the sink's first write creates the table); a table already there is refused."""
        if self.log.listing():
            raise BadInput(f"Delta table {self.where} already exists: each scenario writes a table of its own")

    def context(self) -> dict[str, object]:
        return {"table_path": self.uri}

    def spark_settings(self) -> dict[str, str]:
        return {**SESSION, **self.settings}

    def engine_source(self) -> EngineSource | None:
        """By its path: on the volume, or at `s3a://` from the S3 server directly."""
        if self.uri == self.where:
            return EngineSource("delta", self.where, self.spark_settings())
        return EngineSource("delta", self.uri, {**SESSION, **self.direct}, infrastructure=True)

    def hold(self) -> Hold | None:
        """On the volume the driver is held as each log entry appears; an object store has no folder to watch."""
        if self.uri != self.where:
            return None
        return Hold(f"{self.where}/{LOG}", VERSION_FILE.pattern, holds_folder(self.where))

    def watch(self, folder: CheckpointFolder, history: History, on_commit: OnCommit,
              at_gate: GateHolds | None) -> Watcher | None:
        from harness.run.table_watch import DriverHolds, TableWatcher

        holds = DriverHolds(self.files, holds_folder(self.where)) if self.hold() is not None else at_gate
        return TableWatcher(self, holds, folder, history, on_commit).start()

    def versions_now(self) -> list[int]:
        """The log's versions so far, in order (its table.committed watcher polls them)."""
        return versions(self.log.listing())

    def commit(self, version: int) -> Commit:
        return self.log.commit(version)

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """The rows of the latest snapshot: file i of the snapshot is partition i, a row's index in it its
        offset (a file keeps no order the checkers judge: `ordered`), the commit time of the version that
        added it its timestamp (where reports place a record)."""
        snapshot = self.log.snapshot()
        if snapshot is None:
            raise BadInput(f"the sink wrote no Delta table at {self.where} (looked for {self.where}/_delta_log/ "
                           "on the run's volume): write to the context's table_path")
        self.versions = [version for version, _ in snapshot.files]
        self.paths = [self.log.data_path(path) for _, path in snapshot.files]
        committed_ms = {c.version: c.timestamp_ms for c in self.commits()}
        files = snapshot.files
        return read_files(len(files), lambda p: self._batches(snapshot, p, files[p][1],
                                                              committed_ms.get(files[p][0], 0)), on_batch)

    def _batches(self, snapshot: Snapshot, partition: int, path: str, timestamp_ms: int) -> Iterator[Records]:
        """One data file's rows, `BATCH` at a time as pyarrow decodes them, as columns (a file of a
        1M-record batch is never whole in Python objects, and no object is made for each row). A column
        the table is partitioned by is not in its files: each row of a file has the file's value. Rows its
        deletion vector names are not in the table: left out (offsets count the rows that are)."""
        partition_values, deletion_vector = snapshot.partition_values.get(path, {}), snapshot.deletion_vectors.get(path)
        deleted = (deletion_vectors.positions(deletion_vectors.serialized(self.log.table, deletion_vector,
                                                                         self.files.read_bytes))
                   if deletion_vector else set())
        named = self.log.data_path(path)
        return decoded(self.where, named, file_rows(table_file(self.files, named, self.where), partition, timestamp_ms,
                                                    f"Delta table {self.where}", partition_values, deleted))

    def state_at(self, version: int) -> State:
        """The table as of `version`: each key's values (one for a state table that keeps one row per
        key), to tell a batch's repeat that changed nothing from one applied again."""
        snapshot = self.log.snapshot(upto=version)
        state: dict[bytes | None, list[bytes | None]] = {}
        if snapshot is None:
            return state
        for partition, (_, path) in enumerate(snapshot.files):
            for batch in self._batches(snapshot, partition, path, 0):
                for row in batch:
                    state.setdefault(row.key(), []).append(row.value())
        return state

    def change_of(self, version: int) -> tuple[State, State]:
        """The table as of the version before `version` and as of `version` (a version is a whole snapshot)."""
        return self.state_at(version - 1), self.state_at(version)

    def commits(self) -> list[Commit]:
        """Every version of the log, read once (the read places its rows by their versions' times)."""
        if self._history is None:
            self._history = self.log.history()
        return self._history

    def commit_of(self, partition: int) -> int | None:
        return self.versions[partition]

    def file_of(self, partition: int) -> str | None:
        return self.paths[partition] if self.uri.startswith("s3a://") else None
