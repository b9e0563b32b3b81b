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

from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.base import EngineSource, Hold
from harness.output.commits import Commit, Files, State, decoded, table_file
from harness.output.delta import deletion_vectors
from harness.output.delta.log import LOG, VERSION_FILE, DeltaLog, Snapshot, versions
from harness.output.file_table import FileTable, state_of
from harness.output.rows import file_rows, read_files

# Delta Lake's SQL extension and catalog (its jars are in the image): a session needs them for Delta's
# commands (MERGE, DESCRIBE HISTORY) and its catalog tables; format("delta") alone would not.
SESSION = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
           "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}


def table_path(checkpoint: str) -> str:
    """Where a scenario's table lives: beside its checkpoint, on the volume drivers and executors share."""
    return f"{checkpoint}-table"


class DeltaTable(FileTable):
    """The scenario's table (the context's `table_path`): at `path` of `files` (the run's volume through the
    relay, or its S3 server's bucket), which Spark names `uri` with `settings` of its own (S3A's, through the
    gate; `direct`: the same past it, for the harness's own read by Spark)."""

    name = "delta"
    label = "Delta"
    commits_folder, commit_file = LOG, VERSION_FILE
    unit = "table version"  # what one of its commits is, in explanations
    keyed = False  # its log table's commits append rows (a state table is the sink's to declare)

    def __init__(self, files: Files, path: str, uri: str | None = None, settings: dict[str, str] | None = None,
                 direct: dict[str, str] | None = None) -> None:
        super().__init__(files, path)
        self.uri = uri or self.where
        self.settings = settings or {}
        self.direct = direct or {}
        self.log = DeltaLog(files, self.where)
        self.paths: list[str] = []  # partition -> its data file, where the files are (harness.output.commits.Files)
        self._history: list[Commit] | None = None

    def prepare(self) -> None:
        """Nothing to make (the sink's first write creates the table); a table already there (its log) is
        refused."""
        if self.listing():
            raise BadInput(f"Delta table {self.where} already exists: each scenario writes a table of its own")

    def context(self) -> dict[str, object]:
        return {"table_path": self.uri}

    def spark_settings(self) -> dict[str, str]:
        return {**SESSION, **self.settings}

    def engine_source(self) -> EngineSource | None:
        """By its path: on the volume, or at `s3a://` from the S3 server directly."""
        if self.uri == self.where:
            return super().engine_source()
        return EngineSource("delta", self.uri, {**SESSION, **self.direct}, infrastructure=True)

    def hold(self) -> Hold | None:
        """On the volume the driver is held as each log entry appears; an object store has no folder to watch."""
        return super().hold() if self.uri == self.where else None

    def versions_now(self) -> list[int]:
        """The log's versions so far, in order (its table.committed watcher polls them)."""
        return versions(self.listing())

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
        self.added_by = [version for version, _ in snapshot.files]
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
        if snapshot is None:
            return {}
        return state_of((batch.keys, batch.values) for partition, (_, path) in enumerate(snapshot.files)
                        for batch in self._batches(snapshot, partition, path, 0))

    def commits(self) -> list[Commit]:
        """Every version of the log, read once (the read places its rows by their versions' times)."""
        if self._history is None:
            self._history = self.log.history()
        return self._history

    def file_of(self, partition: int) -> str | None:
        return self.paths[partition] if self.uri.startswith("s3a://") else None
