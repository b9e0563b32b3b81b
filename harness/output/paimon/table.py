"""An Apache Paimon table as an output (Paimon's filesystem catalog, as Spark 3.5 with paimon-spark 0.9
writes it): the latest snapshot's data files as its manifests name them, never a listing of data files
(a file a failed writer left behind is in no snapshot).

A snapshot (`snapshot/snapshot-<id>`, JSON) names two manifest lists: its base (the table as of the
snapshot before) and its delta (what it changed); a manifest list names manifests, a manifest the data
files it adds or deletes (both Avro, zstd-compressed). They are read here with fastavro, and the data files
(Parquet, Paimon's default `file.format`, or ORC) with pyarrow, through the relay as for Delta
(harness.output.delta). Not with pypaimon: it opens a catalog on a filesystem, so it would need a local
copy of the table, and neither 2.1.0 nor 1.4.2 reads a 0.9 table (they look for `_VALUE_STATS_COLS` in each
manifest entry, which 0.9 does not write); the history's evidence (each snapshot's commitUser and
commitIdentifier) needs the snapshots parsed here regardless.

A table with a primary key keeps each write of a key as a row of a data file (`_KEY_<field>` columns, its
`_SEQUENCE_NUMBER` and `_VALUE_KIND` beside the table's own), and an LSM merge of the snapshot's files gives
the table (harness.output.paimon.merge): the rows it leaves out of each file are left out of the read, as
deletion vectors' rows are for Delta. Its commits set rows by key, so a batch committed again that changed
no row is an idempotent repeat (`keyed`).

A snapshot names its batch by its commitIdentifier only where its writer gave one: a StreamTableCommit's
(a `foreachBatch` writer's through Paimon's API, Flink's checkpoint id). Paimon's own Spark sink
(`writeStream.format("paimon")`: PaimonSink.addBatch in 0.9 runs WriteIntoPaimonTable, which ignores the
batch id) commits each micro-batch as a batch write, under BatchWriteBuilder.COMMIT_IDENTIFIER and a new
commitUser each time: its snapshots name no batch, which the harness knows only from when they appeared
(harness.run.table_watch), as for a plain Delta append.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from urllib.parse import urlparse

from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.avro_bounds import check_avro
from harness.output.commits import Commit, Files, State, decoded, table_file
from harness.output.file_table import CatalogTable, state_of
from harness.output.paimon import IDENTIFIER, session_settings
from harness.output.paimon.merge import MergeEngine, merge_engine, superseded
from harness.output.rows import file_rows, read_files

# ASCII digits only (\d takes any script's); a listing of the table folder or of its snapshot/ folder
SNAPSHOT_FILE = re.compile(r"^(?:snapshot/)?snapshot-([0-9]+)$")
BATCH_WRITE = 2**63 - 1  # BatchWriteBuilder.COMMIT_IDENTIFIER (Long.MAX_VALUE): every batch write's, no batch's
ADD = 0  # a manifest entry's _KIND (FileKind.ADD); 1 deletes the file
FORMATS = (".parquet", ".orc")  # the data files' extensions the harness reads (file.format parquet or orc)


def versions(names: Iterable[str]) -> list[int]:
    """The snapshot ids in a listing (its EARLIEST and LATEST hints and anything else left out), in order."""
    return sorted(int(m[1]) for m in map(SNAPSHOT_FILE.match, names) if m)


def volume_path(name: str, folder: str) -> str:
    """A file Paimon's metadata names, on the volume: a bare name is in `folder`, a `file:` URI loses its
    scheme."""
    parsed = urlparse(name)
    if parsed.scheme in ("file", ""):
        return parsed.path if parsed.path.startswith("/") else f"{folder}/{parsed.path}"
    raise BadInput(f"Paimon file {name} is not on the run's volume")


class PaimonTable(CatalogTable):
    """The scenario's Paimon table: its folder in the warehouse (`<warehouse>/<database>.db/<table>`)."""

    name = "paimon"
    label = "Paimon"
    commits_folder, commit_file = "snapshot", SNAPSHOT_FILE
    identifier, catalog_settings = IDENTIFIER, staticmethod(session_settings)
    unit = "snapshot"  # what one of its commits is, in explanations

    def __init__(self, files: Files, path: str, checkpoint: str = "") -> None:
        """`checkpoint`: the query's, which the catalog's warehouse is beside (harness.output.paimon)."""
        super().__init__(files, path, checkpoint)
        self._commits: dict[int, Commit] = {}
        self._read: dict[str, list] = {}  # a manifest or manifest list, read once: Paimon never rewrites one
        self._located: dict[str, str] = {}  # a data file's name -> its path on the volume
        self.keyed = False  # a primary-key table (once read): its commits set rows by key

    versions = staticmethod(versions)  # a watcher's poll of `listing()`

    def versions_now(self) -> list[int]:
        """The snapshots so far, in order (its table.committed watcher polls them)."""
        return versions(self.listing())

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """The rows of the latest snapshot: file i of the snapshot is partition i, a row's index in it its
        offset (a file is one task's write, in its order), the time of the snapshot that added it its
        timestamp (a file whose snapshot has since expired has none, and time 0)."""
        found = versions(self.listing())
        if not found:
            if not self.files.walk(f"{self.where}/schema"):
                raise BadInput(f"the sink wrote no Paimon table at {self.where} (looked for {self.where}/schema/ "
                               "and snapshot/ on the run's volume): write to the context's table path")
            return ReadResult(Records(), {}, {})  # created, never written
        names = self._files(found[-1])
        left_out = self._merged(found[-1], names)
        history = self.commits()
        committed_ms = {c.version: c.timestamp_ms for c in history}
        added_by = {name: c.version for c in history for name in c.added}
        self.added_by = [added_by.get(name) for name in names]
        return read_files(len(names), lambda p: self._batches(p, names[p], 0 if self.added_by[p] is None
                                                              else committed_ms[self.added_by[p]],
                                                              left_out.get(names[p], frozenset())), on_batch)

    def _snapshot(self, version: int) -> dict:
        return json.loads(self.files.read_bytes(f"{self.where}/snapshot/snapshot-{version}"))

    def _schema(self, snapshot: dict) -> dict:
        return json.loads(self.files.read_bytes(f"{self.where}/schema/schema-{snapshot['schemaId']}"))

    def _merged(self, version: int, names: list[str]) -> dict[str, frozenset[int]]:
        """For a primary-key table, the rows of each file of snapshot `version` its merge leaves out (an older
        write of a key, a deleted one); nothing for an append table."""
        schema = self._schema(self._snapshot(version))
        keys = schema.get("primaryKeys") or []
        self.keyed = bool(keys)
        if not keys:
            return {}
        engine: MergeEngine = merge_engine(schema.get("options") or {}, f"Paimon table {self.where}")
        return superseded([(name, lambda name=name: self._data(name)) for name in names], keys, engine,
                          f"Paimon table {self.where}")

    def _data(self, name: str) -> tuple[bytes, bool]:
        """A data file's bytes, and whether it is ORC (else Parquet)."""
        return table_file(self.files, self._path(name), self.where), name.endswith(".orc")

    def _files(self, version: int) -> list[str]:
        """The data files of snapshot `version`, by name, in the order its manifests list them; a table this
        reader cannot read whole is refused."""
        snapshot = self._snapshot(version)
        if snapshot.get("indexManifest"):
            raise BadInput(f"Paimon table {self.where}: snapshot {version} has an index manifest (deletion "
                           "vectors), which the harness does not read")
        live: dict[str, None] = {}  # insertion-ordered
        for manifest_list in (snapshot["baseManifestList"], snapshot["deltaManifestList"]):
            for added, name in self._changes(manifest_list):
                if added:
                    live[name] = None
                else:
                    live.pop(name, None)
        return list(live)

    def _changes(self, manifest_list: str) -> Iterator[tuple[bool, str]]:
        """The data files a manifest list's manifests add (True) or delete (False), by name, in order."""
        for manifest in self._avro(manifest_list, lambda record: record["_FILE_NAME"]):
            yield from self._avro(manifest, lambda entry: (entry["_KIND"] == ADD, entry["_FILE"]["_FILE_NAME"]))

    def _avro(self, name: str, kept: Callable[[dict], object]) -> list:
        """What is `kept` of each record of a manifest or manifest list (its statistics are not)."""
        if name not in self._read:
            import fastavro

            data = self.files.read_bytes(volume_path(name, f"{self.where}/manifest"))
            check_avro(data, name)
            self._read[name] = [kept(record) for record in fastavro.reader(io.BytesIO(data))]  # type: ignore[arg-type]
        return self._read[name]

    def _path(self, name: str) -> str:
        """A data file's path on the volume, found by its name (a UUID's: unique in the table) in a listing
        of the table: its folders (a partition's `dt=1/`, then `bucket-0/`) would otherwise be computed from
        the manifest entry's binary row of partition values and the partition columns' types."""
        if name not in self._located:
            self._located = {posixpath.basename(found): f"{self.where}/{found}"
                             for found in self.files.walk(self.where)}
        if name not in self._located:
            raise BadInput(f"Paimon table {self.where}: data file {name}, which its snapshot names, is not there")
        return self._located[name]

    def _batches(self, partition: int, name: str, timestamp_ms: int,
                 left_out: frozenset[int] = frozenset()) -> Iterator[Records]:
        """One data file's rows, read by column name (Paimon also gives each column its field id), less those
        a primary-key table's merge leaves out (`left_out`, by position)."""
        extension = posixpath.splitext(name)[1]
        if extension not in FORMATS:
            raise BadInput(f"Paimon table {self.where}: data file {name} is in a format the harness does not read "
                           "(file.format parquet or orc)")
        named = self._path(name)
        return decoded(self.where, named, file_rows(table_file(self.files, named, self.where), partition, timestamp_ms,
                                                    f"Paimon table {self.where}", deleted=left_out,
                                                    orc=extension == ".orc"))

    def state_at(self, version: int) -> State:
        """The table as of snapshot `version` (empty before the first): each key's values."""
        if version < 1:
            return {}
        names = self._files(version)
        left_out = self._merged(version, names)
        return state_of((batch.keys, batch.values) for partition, name in enumerate(names)
                        for batch in self._batches(partition, name, 0, left_out.get(name, frozenset())))

    def commit(self, version: int) -> Commit:
        """Snapshot `version` as a Commit: its kind, writer, time and rows, the data files its delta manifest
        list adds and deletes, and the batch its commitIdentifier names (not a batch write's, nor a
        compaction's: a rewrite of files already written, under the identifier of the commit it followed)."""
        snapshot = self._snapshot(version)
        changes = list(self._changes(snapshot["deltaManifestList"]))
        identifier, kind = snapshot.get("commitIdentifier"), snapshot.get("commitKind")
        batch = identifier if identifier not in (None, BATCH_WRITE) and kind != "COMPACT" else None
        return Commit(version, operation=kind, app_id=snapshot.get("commitUser"), epoch=batch,
                      added=tuple(name for added, name in changes if added),
                      removed=tuple(name for added, name in changes if not added),
                      timestamp_ms=int(snapshot.get("timeMillis") or 0),
                      rows=int(snapshot.get("deltaRecordCount") or 0),
                      named_by="" if batch is None else "commitIdentifier", snapshot_id=version,
                      rewrite=kind == "COMPACT")

    def commits(self) -> list[Commit]:
        """Every snapshot still there (the read places its rows by their snapshots' times), each read once:
        a snapshot is never rewritten, and one committed since the last look is read too."""
        found = versions(self.listing())
        self._commits = {version: self._commits.get(version) or self.commit(version) for version in found}
        return list(self._commits.values())
