"""An Apache Hudi table as an output (copy-on-write or merge-on-read, as Spark 3.5 with Hudi 1.2 writes it:
table version 9, timeline layout 2): the latest completed instant's file slices as the timeline's commit
metadata names them, never a listing of data files alone (a file a failed or zombie writer left behind is in
no completed instant).

The timeline is `.hoodie/timeline/`: an instant is requested (`<t>.commit.requested`), inflight
(`<t>.inflight`), then completed as `<requested time>_<completion time>.<action>` (InstantFileNameGeneratorV2;
Hudi 0.x kept `<t>.commit` in `.hoodie/`), each time `yyyyMMddHHmmssSSS`. A completed write's file is its
HoodieCommitMetadata as an Avro data file (CommitMetadataSerDeV2; 0.x wrote JSON): per partition path the
write stat of each base file it wrote (fileId, path, numInserts, ...), and its extraMetadata. A base file is
`<fileId>_<writeToken>_<instant>.parquet`; the file group's newest is the table's (copy-on-write: each write
to a file group copies its earlier rows into a new base file). The timeline is read here with fastavro, the
base files with pyarrow, through the relay as for Delta (harness.output.delta).

Hudi's Spark streaming sink (HoodieStreamingSink.addBatch, 1.2) names its micro-batch in extraMetadata,
`_hudi_streaming_sink_checkpoint` = `{"<identifier>": "<batch id>"}` (CommitUtils.getCheckpointValueAsString;
the identifier is `hoodie.datasource.write.streaming.checkpoint.identifier`, `default_single_writer` unless
set): the key it reads back to skip a batch already committed. It records no query id.

A copy-on-write table is not read with hudi-rs (`hudi` 0.5.0), though it reads such a table: it opens a
folder, so each read would need a local copy of the whole table, and the watcher's polls and the history's
evidence (completion times, which it does not give, and the checkpoint) need the timeline parsed here
regardless. A merge-on-read table keeps updates in log files that a merge with the base files resolves
(Hudi's own record merging, deletes and rollbacks): after the run it is copied out once and each file slice
is read merged by hudi-rs (harness.output.hudi.merge).
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import re
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.avro_bounds import check_avro
from harness.output.commits import Commit, Files, State, decoded, table_file
from harness.output.file_table import FileTable, state_of
from harness.output.hudi.merge import Slice, merged_slices
from harness.output.rows import file_rows, read_files

META = ".hoodie"
TIMELINE = f"{META}/timeline"
# a completed write (a compaction completes as a commit, a clustering as a replacecommit); a clean, a rollback
# or a savepoint changes no row of the table. ASCII digits only: \d takes any script's.
INSTANT_FILE = re.compile(r"^([0-9]+)_([0-9]+)\.(commit|deltacommit|replacecommit)$")
ANY_INSTANT = re.compile(r"^([0-9]+)[._]")  # an instant's file in any state, of any action
BASE_FILE = re.compile(r"^([^_/]+)_[0-9]+-[0-9]+-[0-9]+_([0-9]+)\.parquet$")
CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"  # HoodieStreamingSink.SINK_CHECKPOINT_KEY
# WriteOperationType of a commit that only moves rows: clustering (a replacecommit), a merge-on-read table's
# compaction of log files into base files (a commit)
REWRITES = frozenset({"CLUSTER", "COMPACT", "LOG_COMPACT"})
UPSERTS = frozenset({"UPSERT", "UPSERT_PREPPED"})  # WriteOperationType of a write that sets rows by record key

Group = tuple[str, str]  # a file group: its partition path and file id


def completed(names: list[str]) -> dict[int, str]:
    """The completed writes in a listing of the timeline folder: requested time -> file name, in order."""
    return dict(sorted((int(m[1]), name) for name in names if (m := INSTANT_FILE.match(name))))


def epoch_ms(instant: str) -> int:
    """An instant time (`yyyyMMddHHmmssSSS`) as epoch milliseconds. It is in the table's timeline zone: UTC,
    or the writer JVM's (`LOCAL`, the default), which the harness's Spark containers leave at UTC."""
    second = datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return int(second.timestamp()) * 1000 + int(instant[14:17] or 0)


def group_of(path: str) -> Group | None:
    """A base file's file group, from its path in the table (None: not a base file)."""
    folder, name = posixpath.split(path)
    match = BASE_FILE.match(name)
    return (folder, match[1]) if match else None


def parse_commit(name: str, data: bytes) -> tuple[Commit, set[Group]]:
    """A completed write's timeline file as a Commit, and the file groups it replaced (an insert overwrite's,
    a clustering's: no longer in the table)."""
    import fastavro

    match = INSTANT_FILE.match(name)
    assert match, f"{name} is a completed write's file"
    if data:
        check_avro(data, name)
    metadata: dict = next(iter(fastavro.reader(io.BytesIO(data))), {}) if data else {}  # type: ignore[assignment]
    stats = [stat for written in (metadata.get("partitionToWriteStats") or {}).values() for stat in written]
    extra = metadata.get("extraMetadata") or {}
    checkpoint = json.loads(extra[CHECKPOINT_KEY]) if extra.get(CHECKPOINT_KEY) else {}
    writer, batch = next(iter(checkpoint.items())) if len(checkpoint) == 1 else (None, None)
    epoch = int(batch) if batch is not None else None
    replaced = {(folder, file_id) for folder, ids in (metadata.get("partitionToReplaceFileIds") or {}).items()
                for file_id in ids}
    return Commit(int(match[1]), operation=metadata.get("operationType") or match[3], app_id=writer,
                  epoch=epoch, named_by="extraMetadata" if epoch is not None else "",
                  added=tuple(stat["path"] for stat in stats if stat.get("path")), timestamp_ms=epoch_ms(match[2]),
                  rows=sum((stat.get("numInserts") or 0) + (stat.get("numUpdateWrites") or 0) for stat in stats),
                  rewrite=metadata.get("operationType") in REWRITES), replaced


class HudiTable(FileTable):
    """The scenario's table (its folder on the volume); a partition's version (`added_by`) is the instant
    that wrote its base file."""

    name = "hudi"
    label = "Hudi"
    commits_folder, commit_file = TIMELINE, INSTANT_FILE
    unit = "commit"  # what one of its commits is, in explanations: a completed instant

    def __init__(self, files: Files, path: str) -> None:
        super().__init__(files, path)
        self._commits: dict[int, tuple[Commit, set[Group]]] = {}  # a completed instant's file never changes
        self._local: tempfile.TemporaryDirectory[str] | None = None  # a merge-on-read table's copy, for hudi-rs

    @property
    def keyed(self) -> bool:
        """Its commits upsert by record key (Hudi's `upsert` operation): a batch upserted again that changed no
        row is an idempotent repeat (harness.output.base.Output.keyed)."""
        return any(commit.operation in UPSERTS for commit in self.commits())

    def context(self) -> dict[str, object]:
        return {"table_path": self.where}

    def spark_settings(self) -> dict[str, str]:
        from harness.output.hudi import SESSION

        return SESSION

    def versions_now(self) -> list[int]:
        """The completed writes so far, in order (its table.committed watcher polls them)."""
        return list(completed(self.listing()))

    def commit(self, version: int) -> Commit:
        return self._parsed(version, completed(self.listing()))[0]

    def _parsed(self, version: int, found: dict[int, str]) -> tuple[Commit, set[Group]]:
        """A completed write's commit and the file groups it replaced, read once (its file never changes)."""
        if version not in self._commits:
            if version not in found:
                raise BadInput(f"Hudi table {self.where}: no completed instant {version} in {TIMELINE}/")
            name = found[version]
            self._commits[version] = parse_commit(name, self.files.read_bytes(f"{self.where}/{TIMELINE}/{name}"))
        return self._commits[version]

    def commits(self) -> list[Commit]:
        """Every completed write still in the active timeline (an archived one is not), in order."""
        found = completed(self.listing())
        return [self._parsed(version, found)[0] for version in found]

    def _properties(self) -> dict[str, str]:
        """hoodie.properties (Java properties); a table the harness cannot read is refused."""
        try:
            text = self.files.read_bytes(f"{self.where}/{META}/hoodie.properties").decode()
        except OSError:
            raise BadInput(f"the sink wrote no Hudi table at {self.where} (looked for {self.where}/{META}/"
                           "hoodie.properties on the run's volume): write to the context's table_path") from None
        properties = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and line[0] not in "#!")
        if int(properties.get("hoodie.table.version", 0)) < 8:
            raise BadInput(f"Hudi table {self.where} is of table version {properties.get('hoodie.table.version')}: "
                           f"the harness reads version 8 and later (Hudi 1.x, its timeline in {TIMELINE}/)")
        return properties

    def _slices(self, upto: int | None = None) -> list[tuple[int, str]]:
        """The table's base files as of instant `upto` (the latest without), each with the instant that wrote
        it, in the order of those instants: each file group's newest that a completed write names, or, for
        a group no write in the active timeline names, its newest older than the timeline (archived: complete).
        A file a write names that is gone was deleted by Hudi's cleaner: refused, not read as an empty group."""
        self._properties()
        listing = self.listing()
        found = completed(listing)
        named: dict[Group, tuple[int, str]] = {}
        replaced: set[Group] = set()
        for version in found:
            if upto is not None and version > upto:
                break
            commit, gone = self._parsed(version, found)
            for path in commit.added:
                if (group := group_of(path)) is not None:
                    named[group] = version, path
            replaced |= gone
        start = min((int(m[1]) for m in map(ANY_INSTANT.match, listing) if m), default=0)  # none older than none
        before = start if upto is None else min(start, upto + 1)
        present = set(self.files.walk(self.where))
        older: dict[Group, tuple[int, str]] = {}
        for path in present:
            group, match = group_of(path), BASE_FILE.match(posixpath.basename(path))
            if path.startswith(f"{META}/") or group is None or match is None or group in named:
                continue
            if (instant := int(match[2])) < before and instant > older.get(group, (-1, ""))[0]:
                older[group] = instant, path
        cleaned = sorted(path for _, path in named.values() if path not in present)
        if cleaned:
            as_of = f"instant {upto}" if upto is not None else "its latest instant"
            raise BadInput(f"Hudi table {self.where}: base files its timeline names as of {as_of} are gone "
                           f"({', '.join(cleaned[:3])}): Hudi's cleaner deleted them (set hoodie.clean.commits."
                           "retained above the batches a run commits to keep every file slice)")
        return sorted(slice_ for group, slice_ in (older | named).items() if group not in replaced)

    @property
    def merge_on_read(self) -> bool:
        return self._properties().get("hoodie.table.type") == "MERGE_ON_READ"

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """The rows of the latest completed instant: base file i is partition i, a row's index in it its
        offset, the completion time of the instant that wrote it its timestamp (where reports place a
        record; a base file holds its file group's earlier rows too, copied into it). A merge-on-read
        table's file slice i (its base file merged with its log files) is partition i."""
        if self.merge_on_read:
            return self._read_merged(on_batch)
        slices = self._slices()
        self.added_by = [version for version, _ in slices]
        committed_ms = {c.version: c.timestamp_ms for c in self.commits()}
        return read_files(len(slices), lambda p: self._batches(p, slices[p][1], committed_ms.get(slices[p][0], 0)),
                          on_batch)

    def _batches(self, partition: int, path: str, timestamp_ms: int) -> Iterator[Records]:
        """One base file's `key` and `value` columns (Hudi's meta columns, _hoodie_commit_time and the
        rest, are not read)."""
        named = f"{self.where}/{path}"
        return decoded(self.where, named, file_rows(table_file(self.files, named, self.where), partition, timestamp_ms,
                                                    f"Hudi table {self.where}"))

    def state_at(self, version: int) -> State:
        """The table as of instant `version` (empty before the first): each key's values. An instant time is
        an int: as of `version - 1` (change_of's before) is as of every instant before `version`."""
        if self.merge_on_read:
            return state_of((keys, values) for _, keys, values in self._merged_slices(version))
        return state_of((batch.keys, batch.values) for partition, (_, path) in enumerate(self._slices(upto=version))
                        for batch in self._batches(partition, path, 0))

    def _read_merged(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        slices = self._merged_slices(None)
        self.added_by = [instant for instant, _, _ in slices]
        committed_ms = {c.version: c.timestamp_ms for c in self.commits()}
        return read_files(len(slices), lambda p: iter([Records.run(p, 0, slices[p][1], slices[p][2],
                                                                   committed_ms.get(slices[p][0], 0))]), on_batch)

    def _merged_slices(self, upto: int | None) -> list[Slice]:
        """A merge-on-read table's file slices as of instant `upto` (the latest without), each its base file
        merged with its log files by hudi-rs (the log's newer writes of a key over the base file's, its
        deletes and rollbacks applied) and the instant the slice was made by: its rows as records."""
        return merged_slices(self._local_copy(), upto, f"Hudi table {self.where}")

    def _local_copy(self) -> str:
        """The table copied out of the volume through the relay once (hudi-rs reads a folder): a table is
        read after its run, when nothing writes it. The copy goes with this object."""
        if self._local is None:
            self._local = tempfile.TemporaryDirectory(prefix="eo-hudi-")
            for name in self.files.walk(self.where):
                target = posixpath.join(self._local.name, name)
                os.makedirs(posixpath.dirname(target), exist_ok=True)
                with open(target, "wb") as file:
                    file.write(self.files.read_bytes(f"{self.where}/{name}"))
        return self._local.name
