"""An Apache Iceberg table as an output (Iceberg's Hadoop catalog, as Spark writes it): the current
snapshot's data files as its manifests name them, never a listing of data files (a file a failed writer
left behind is in no snapshot).

A commit is a new metadata file, `metadata/v<N>.metadata.json`, put in place by an atomic rename: N is the
table's version here, what the driver is held at and what reports name. A version that makes a new
current snapshot is a commit with data; its snapshot's summary says what the write was, and Iceberg's own
streaming sink puts the query's id and the batch id there (`spark.sql.streaming.queryId`,
`spark.sql.streaming.epochId`), which is how it skips a batch it already committed. A `foreachBatch`
write names no batch (apache/iceberg#8809): the harness then knows its batch from when it appeared
(harness.run.table_watch), as for a plain Delta append.

Metadata, manifest lists and manifests are parsed by pyiceberg (`TableMetadataUtil`, `Snapshot.manifests`,
`ManifestFile.fetch_manifest_entry`) over a FileIO that reads through the relay; the data files are read
with pyarrow (harness.output.rows), as for Delta. Not pyiceberg's scan: it reads data through pyarrow's
own filesystems, which cannot reach the run's volume, and the evidence (which snapshot added each file)
is the manifests' anyway. A merge-on-read table's position delete files (Spark's MERGE, UPDATE and DELETE
with `write.*.mode` merge-on-read) are applied as pyiceberg's scan applies them: the rows they name are not
in the table (harness.output.iceberg.deletes).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlparse

from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.avro_bounds import check_avro
from harness.output.commits import Commit, Files, State, TableCorrupt, decoded, table_file
from harness.output.file_table import CatalogTable, state_of
from harness.output.iceberg import IDENTIFIER, session_settings
from harness.output.iceberg.deletes import position_deletes
from harness.output.rows import file_columns, file_rows, read_files

if TYPE_CHECKING:
    from pyiceberg.table.metadata import TableMetadata

METADATA = "metadata"
VERSION_FILE = re.compile(r"^v([0-9]+)\.metadata\.json$")  # ASCII digits: HadoopTableOperations' own names
QUERY_ID, EPOCH_ID = "spark.sql.streaming.queryId", "spark.sql.streaming.epochId"  # Iceberg's streaming sink's
APP_ID = "spark.app.id"
REWRITE = "replace"  # a snapshot's operation that only moves rows: rewrite_data_files, rewrite_manifests


def versions(names: Iterable[str]) -> list[int]:
    """The metadata versions in a listing of `metadata/`, in order (other names left out)."""
    return sorted(int(m[1]) for m in map(VERSION_FILE.match, names) if m)


def volume_path(location: str) -> str:
    """A file Iceberg's metadata names (`file:/checkpoints/...` or a bare path), on the run's volume."""
    parsed = urlparse(location)
    if parsed.scheme not in ("file", ""):
        raise BadInput(f"Iceberg file {location} is not on the run's volume")
    return parsed.path


def file_io(files: Files, path_of: Callable[[str], str] = volume_path) -> Any:
    """A pyiceberg FileIO that reads `files` (the harness never writes a table), a location named by
    `path_of`."""
    from pyiceberg.io import FileIO, InputFile, OutputFile

    class RelayInput(InputFile):
        def __init__(self, location: str) -> None:
            super().__init__(location)
            self._data: bytes | None = None

        def data(self) -> bytes:
            if self._data is None:  # a manifest list or manifest the committed metadata names: it must be there
                path = path_of(self.location)
                data = table_file(files, path, path.rpartition("/metadata/")[0] or path)
                if self.location.endswith(".avro"):  # a manifest list or manifest: bounded before pyiceberg decodes it
                    check_avro(data, self.location)
                self._data = data
            return self._data

        def __len__(self) -> int:
            return len(self.data())

        def exists(self) -> bool:
            try:
                self.data()
            except (OSError, TableCorrupt):
                return False
            return True

        def open(self, seekable: bool = True) -> io.BytesIO:
            return io.BytesIO(self.data())

    class RelayIO(FileIO):
        def new_input(self, location: str) -> InputFile:
            return RelayInput(location)

        def new_output(self, location: str) -> OutputFile:
            raise OSError(f"the harness never writes a table: {location}")

        def delete(self, location: str | InputFile | OutputFile) -> None:
            raise OSError(f"the harness never writes a table: {location}")

    return RelayIO()


class LiveFile(NamedTuple):
    """A data file of a snapshot: where it is, the snapshot that added it, the rows its manifest records, and
    the positions of its rows the snapshot's position deletes name (merge-on-read: not in the table)."""

    path: str
    snapshot: int
    rows: int
    deleted: frozenset[int] = frozenset()


class IcebergTable(CatalogTable):
    """The scenario's Iceberg table: its folder in the warehouse (`<warehouse>/<namespace>/<table>`)."""

    name = "iceberg"
    label = "Iceberg"
    commits_folder, commit_file = METADATA, VERSION_FILE
    identifier, catalog_settings = IDENTIFIER, staticmethod(session_settings)
    unit = "table version"  # what one of its commits is, in explanations
    keyed = False  # its log table's commits append rows (a state table is the sink's to declare)

    path_of = staticmethod(volume_path)  # where a location the metadata names is, in `files`

    def __init__(self, files: Files, path: str, checkpoint: str = "") -> None:
        """`checkpoint`: the query's, which the catalog's warehouse is beside (harness.output.iceberg)."""
        super().__init__(files, path, checkpoint)
        self.io = file_io(files, self.path_of)
        self.paths: list[str] = []  # partition -> its data file, as the metadata names it
        self.metadata = cache(self._metadata)  # a metadata file is never rewritten

    def versions_now(self) -> list[int]:
        """The metadata versions so far, in order (its table.committed watcher polls them)."""
        return versions(self.listing())

    def _metadata(self, version: int) -> TableMetadata:
        from pyiceberg.table.metadata import TableMetadataUtil

        text = self.files.read_bytes(f"{self.where}/{METADATA}/v{version}.metadata.json").decode()
        return TableMetadataUtil.parse_raw(text)

    def _current(self, version: int) -> int | None:
        """The current snapshot of a version's metadata (None before the first write)."""
        return self.metadata(version).current_snapshot_id

    def commit(self, version: int) -> Commit:
        """What version N did: a commit with data when its current snapshot is a new one (a snapshot is made
        by one version); a version that made none (CREATE TABLE, a property) adds nothing."""
        snapshot_id = self._current(version)
        earlier = self._current(version - 1) if version > 1 and self._exists(version - 1) else None
        if snapshot_id is None or snapshot_id == earlier:
            return Commit(version, operation="metadata", timestamp_ms=self.metadata(version).last_updated_ms)
        snapshot = self.metadata(version).snapshot_by_id(snapshot_id)
        assert snapshot is not None, "a metadata file names its current snapshot among its snapshots"
        summary = snapshot.summary
        properties = dict(summary.additional_properties) if summary is not None else {}
        from pyiceberg.manifest import ManifestEntryStatus

        added, removed = [], []
        for manifest in snapshot.manifests(self.io):
            for entry in manifest.fetch_manifest_entry(self.io, discard_deleted=False):
                if entry.snapshot_id == snapshot_id and entry.status == ManifestEntryStatus.ADDED:
                    added.append(entry.data_file.file_path)
                elif entry.snapshot_id == snapshot_id and entry.status == ManifestEntryStatus.DELETED:
                    removed.append(entry.data_file.file_path)
        epoch = properties.get(EPOCH_ID)
        return Commit(version, operation=summary.operation.value if summary is not None else None,
                      app_id=properties.get(APP_ID), query_id=properties.get(QUERY_ID),
                      epoch=int(epoch) if epoch is not None and epoch.isascii() and epoch.isdigit() else None,
                      added=tuple(added), removed=tuple(removed), timestamp_ms=snapshot.timestamp_ms,
                      rows=int(properties.get("added-records", 0)), snapshot_id=snapshot_id,
                      named_by="summary" if epoch is not None else "",
                      rewrite=summary is not None and summary.operation.value == REWRITE)

    def _exists(self, version: int) -> bool:
        try:
            self.metadata(version)
        except OSError:
            return False
        return True

    def commits(self) -> list[Commit]:
        """Every version's commit, in order."""
        return [self.commit(version) for version in self.versions_now()]

    def _live(self, version: int) -> list[LiveFile]:
        """The data files of a version's current snapshot, each with the snapshot that added it, the rows its
        manifest says it holds and the rows its position deletes remove (merge-on-read, as Spark writes it:
        a delete file of a data sequence number applies to the files of that number and older), in the
        manifests' order. Equality deletes and deletion vectors are refused by name."""
        from pyiceberg.manifest import ManifestContent

        snapshot_id = self._current(version)
        if snapshot_id is None:
            return []
        snapshot = self.metadata(version).snapshot_by_id(snapshot_id)
        assert snapshot is not None, "a metadata file names its current snapshot among its snapshots"
        data, deletes = [], []
        for manifest in snapshot.manifests(self.io):
            entries = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
            (data if manifest.content == ManifestContent.DATA else deletes).extend(entries)
        removed = position_deletes(self._delete_rows(entry) for entry in deletes)
        return [LiveFile(e.data_file.file_path, e.snapshot_id, e.data_file.record_count,
                         removed.deleted(e.data_file.file_path, e.sequence_number or 0)) for e in data]

    def _delete_rows(self, entry: Any) -> tuple[int, list[str], list[int]]:
        """A position delete file's data sequence number and its (file_path, pos) columns."""
        from pyiceberg.manifest import DataFileContent, FileFormat

        file = entry.data_file
        if file.content == DataFileContent.EQUALITY_DELETES:
            raise BadInput(f"Iceberg table {self.where} has equality delete files ({file.file_path}), which the "
                           "harness does not apply (it reads position deletes, as Spark writes merge-on-read)")
        if file.file_format != FileFormat.PARQUET:
            raise BadInput(f"Iceberg table {self.where}: delete file {file.file_path} is {file.file_format.name} "
                           "(deletion vectors, format version 3), which the harness does not read (it reads "
                           "Parquet position deletes, format version 2)")
        columns = file_columns(table_file(self.files, self.path_of(file.file_path), self.where), False,
                               ["file_path", "pos"])
        if "file_path" not in columns or "pos" not in columns:
            raise BadInput(f"Iceberg table {self.where}: delete file {file.file_path} has no file_path and pos")
        return entry.sequence_number or 0, columns["file_path"], columns["pos"]

    def _latest(self) -> int:
        found = self.versions_now()
        if not found:
            raise BadInput(f"the sink wrote no Iceberg table at {self.where} ({self.looked_for}): create the "
                           "context's table_name")
        return found[-1]

    @property
    def looked_for(self) -> str:
        return f"looked for {self.where}/{METADATA}/v<N>.metadata.json on the run's volume"

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """The rows of the latest version's current snapshot: file i is partition i, a row's index in it its
        offset, the commit time of the snapshot that added it its timestamp."""
        latest = self._latest()
        version_of = {c.snapshot_id: c.version for c in self.commits() if c.snapshot_id is not None}
        snapshots = {s.snapshot_id: s.timestamp_ms for s in self.metadata(latest).snapshots}
        live = self._live(latest)
        self.added_by = [version_of.get(file.snapshot) for file in live]
        self.paths = [file.path for file in live]
        read = read_files(len(live), lambda p: self._rows(p, live[p].path, snapshots.get(live[p].snapshot, 0),
                                                          live[p].deleted), on_batch)
        # a file's rows read and those its deletes removed against its commit's count (a delete naming a
        # position past the file's end removed nothing)
        read.rewritten = [{"file": self.file_of(p) or file.path, "version": self.added_by[p],
                           "committed_rows": file.rows, "rows": read.stable[p] + len(file.deleted)}
                          for p, file in enumerate(live) if read.stable[p] + len(file.deleted) != file.rows]
        return read

    def _rows(self, partition: int, path: str, timestamp_ms: int,
              deleted: frozenset[int] = frozenset()) -> Iterator[Records]:
        if not path.endswith(".parquet"):
            raise BadInput(f"Iceberg table {self.where}: data file {path} is in a format the harness does not read "
                           "(write.format.default parquet, Iceberg's default)")
        named = self.path_of(path)
        return decoded(self.where, named, file_rows(table_file(self.files, named, self.where), partition, timestamp_ms,
                                                    f"Iceberg table {self.where}", deleted=deleted))

    def state_at(self, version: int) -> State:
        """The table as of `version`: each key's values, to tell a batch's repeat that changed nothing from
        one applied again."""
        if version < 1 or not self._exists(version):
            return {}
        return state_of((batch.keys, batch.values) for partition, file in enumerate(self._live(version))
                        for batch in self._rows(partition, file.path, 0, file.deleted))
