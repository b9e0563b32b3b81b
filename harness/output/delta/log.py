"""A Delta table's transaction log as data: its versions (`_delta_log/<20 digits>.json`, one action per
line) and classic checkpoints (`<v>.checkpoint.parquet`, or `<v>.checkpoint.<k>.<n>.parquet` in n
parts), the latest committed snapshot's data files, and each version's batch identity.

A version names the streaming batch it wrote in two places: a `txn` action (appId, version: Spark's
own Delta sink writes the query id and the batch id; a `foreachBatch` writer with the `txnAppId` and
`txnVersion` options writes its own) and, for Spark's sink, `commitInfo.operationParameters.epochId`.
A plain append names none: the harness then knows its batch only from when the version appeared
(harness.run.table_watch).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from harness.errors import BadInput
from harness.output.commits import Commit, Files, PartitionValues

LOG = "_delta_log"
# ASCII digits only: \d takes any script's, whose version the log's own name (`{version:020d}.json`) is not
VERSION_FILE = re.compile(r"^([0-9]{20})\.json$")
CHECKPOINT_FILE = re.compile(r"^([0-9]{20})\.checkpoint(?:\.([0-9]+)\.([0-9]+))?\.parquet$")
# the reader features a snapshot is read right with here: a file's rows are its rows, less its deletion
# vector's (the others change no `key` or `value` string, or a table's vacuum only)
READ_FEATURES = frozenset({"deletionVectors", "timestampNtz", "vacuumProtocolCheck", "typeWidening",
                           "typeWidening-preview", "variantType", "variantType-preview"})


def unread_features(actions: Iterable[dict]) -> list[str]:
    """The table features of a log's `protocol` and `metaData` actions that the reader does not read (column
    mapping: columns named apart from their files'; v2 checkpoints: a snapshot in sidecar files; any other
    reader feature), by their names."""
    found = []
    for action in actions:
        for feature in (action.get("protocol") or {}).get("readerFeatures") or ():
            if feature not in READ_FEATURES:
                found.append(feature)
        configuration = (action.get("metaData") or {}).get("configuration") or {}
        if isinstance(configuration, list):  # a checkpoint's map column: (key, value) pairs
            configuration = dict(configuration)
        mode = configuration.get("delta.columnMapping.mode")
        if mode not in (None, "none"):
            found.append("columnMapping")
    return list(dict.fromkeys(found))


def parse_commit(version: int, text: str) -> Commit:
    """A version's log entry (newline-delimited JSON actions) as a Commit: a rewrite when it adds or
    removes files and every one of those actions says `dataChange: false` (OPTIMIZE, auto-compaction, a
    purge of deletion vectors: Delta's own mark of a commit that only rearranges rows)."""
    fields: dict = {"version": version}
    added, values, added_vectors, removed, removed_vectors = [], [], [], [], []
    changes = []  # each add's and remove's dataChange
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            added.append(action["add"]["path"])
            values.append(tuple((action["add"].get("partitionValues") or {}).items()))
            added_vectors.append(_json(action["add"].get("deletionVector")))
            changes.append(action["add"].get("dataChange", True))
        elif "remove" in action:
            removed.append(action["remove"]["path"])
            removed_vectors.append(_json(action["remove"].get("deletionVector")))
            changes.append(action["remove"].get("dataChange", True))
        elif "txn" in action:
            fields["app_id"], fields["txn_version"] = action["txn"]["appId"], int(action["txn"]["version"])
        elif "commitInfo" in action:
            info = action["commitInfo"]
            fields["operation"] = info.get("operation")
            fields["timestamp_ms"] = int(info.get("timestamp") or 0)
            parameters = info.get("operationParameters") or {}
            fields["query_id"] = parameters.get("queryId")
            if parameters.get("epochId") not in (None, ""):
                fields["epoch"] = int(parameters["epochId"])
    return Commit(**fields, added=tuple(added), added_values=tuple(values), added_vectors=tuple(added_vectors),
                  removed=tuple(removed), removed_vectors=tuple(removed_vectors),
                  rewrite=bool(changes) and not any(change is not False for change in changes))


def _json(descriptor: dict | None) -> str | None:
    return json.dumps(descriptor, sort_keys=True) if descriptor else None


def vector_id(descriptor: str | None) -> str | None:
    """A deletion vector's identity in the log (Delta's uniqueId): a file is in the table as (path, its
    vector), so a remove names the vector the file had and an add of the same path a new one."""
    if descriptor is None:
        return None
    vector = json.loads(descriptor)
    offset = vector.get("offset")
    return vector["storageType"] + vector["pathOrInlineDv"] + ("" if offset is None else f"@{offset}")


@dataclass
class Snapshot:
    """The latest committed version and its data files, each with the version that added it (the
    checkpoint's version for files it holds), in log order; the partition values of those that have any,
    and the deletion vector of those some of whose rows were deleted."""

    version: int
    files: list[tuple[int, str]] = field(default_factory=list)
    partition_values: dict[str, dict[str, str | None]] = field(default_factory=dict)
    deletion_vectors: dict[str, dict] = field(default_factory=dict)


def versions(names: Iterable[str]) -> list[int]:
    """The versions whose log entry is in a listing of `_delta_log/`, in order."""
    return sorted(int(m[1]) for m in map(VERSION_FILE.match, names) if m)


def latest_checkpoint(names: Iterable[str]) -> tuple[int, list[str]] | None:
    """The newest complete classic checkpoint in a listing of `_delta_log/`: its version and files."""
    parts: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for name in names:
        match = CHECKPOINT_FILE.match(name)
        if match:
            version, part, count = int(match[1]), int(match[2] or 1), int(match[3] or 1)
            parts.setdefault((version, count), []).append((part, name))
    complete = [(version, sorted(found)) for (version, count), found in parts.items() if len(found) == count]
    if not complete:
        return None
    version, found = max(complete)
    return version, [name for _, name in found]


def checkpoint_files(data: list[bytes]) -> list[tuple[str, PartitionValues, str | None]]:
    """The data files a checkpoint holds (its `add` rows) with their partition values and deletion
    vectors, from the parts' bytes."""
    import pyarrow.parquet as pq

    files: list[tuple[str, PartitionValues, str | None]] = []
    for part in data:
        table = pq.read_table(io.BytesIO(part), columns=["add"])
        files += [(add["path"], tuple(add.get("partitionValues") or ()), _json(add.get("deletionVector")))
                  for add in table.column("add").to_pylist() if add]
    return files


def checkpoint_actions(data: list[bytes]) -> list[dict]:
    """A checkpoint's `protocol` and `metaData` rows, as actions, from the parts' bytes."""
    import pyarrow.parquet as pq

    actions = []
    for part in data:
        table = pq.read_table(io.BytesIO(part))
        for column in ("protocol", "metaData"):
            if column in table.column_names:
                actions += [{column: row} for row in table.column(column).to_pylist() if row]
    return actions


class DeltaLog:
    """One table's log, read through `files`: the history of its versions and its latest snapshot."""

    def __init__(self, files: Files, table: str) -> None:
        self.files = files
        self.table = table.rstrip("/")

    def listing(self) -> list[str]:
        """The names in `_delta_log/` (none when the table was never written)."""
        return [name for name in self.files.walk(f"{self.table}/{LOG}") if "/" not in name]

    def entry(self, version: int) -> str:
        """A version's log entry, as its file has it."""
        return self.files.read_bytes(f"{self.table}/{LOG}/{version:020d}.json").decode()

    def commit(self, version: int) -> Commit:
        return parse_commit(version, self.entry(version))

    def _refuse_unread(self, actions: Iterable[dict]) -> None:
        """BadInput naming the table features the reader does not read, where the log turns one on."""
        features = unread_features(actions)
        if features:
            raise BadInput(f"Delta table {self.table} uses {', '.join(features)}, which the harness's reader does "
                           "not read: write the table without it (the checkers read a `key` and a `value` column "
                           "of each data file as Spark wrote them)")

    def history(self, listing: list[str] | None = None) -> list[Commit]:
        """Every version whose log entry is still there, in order."""
        return [self.commit(v) for v in versions(self.listing() if listing is None else listing)]

    def snapshot(self, listing: list[str] | None = None, upto: int | None = None) -> Snapshot | None:
        """The latest snapshot (or the one as of version `upto`): a checkpoint's files, then the versions
        after it; None for no table."""
        names = self.listing() if listing is None else listing
        if upto is not None:  # the log as it stood at `upto`: later entries and checkpoints left out
            names = [n for n in names if (m := VERSION_FILE.match(n) or CHECKPOINT_FILE.match(n)) is None
                     or int(m[1]) <= upto]
        entries = versions(names)
        checkpoint = latest_checkpoint(names)
        if not entries and checkpoint is None:
            return None
        live: dict[tuple[str, str | None], int] = {}  # (path, deletion vector id) -> the version that added it
        values: dict[str, PartitionValues] = {}
        vectors: dict[str, str | None] = {}
        start = 0
        if checkpoint is not None:
            start, parts = checkpoint
            data = [self.files.read_bytes(f"{self.table}/{LOG}/{name}") for name in parts]
            self._refuse_unread(checkpoint_actions(data))
            for path, partition_values, vector in checkpoint_files(data):
                live[path, vector_id(vector)], values[path], vectors[path] = start, partition_values, vector
            start += 1
        last = start - 1
        for version in (v for v in entries if v >= start):
            if version != last + 1:
                raise BadInput(f"Delta table {self.table}: version {last + 1} is missing from its log "
                               f"(found {version} next): the log cannot be read to a snapshot")
            text = self.entry(version)
            self._refuse_unread(json.loads(line) for line in text.splitlines() if line.strip())
            commit = parse_commit(version, text)
            # a file removed and added again here with a new deletion vector keeps the version that wrote it
            written: dict[str, int] = {}
            for path, vector in zip(commit.removed, commit.removed_vectors, strict=True):
                before = live.pop((path, vector_id(vector)), None)
                if before is not None:
                    written[path] = before
            for path, partition_values, vector in zip(commit.added, commit.added_values, commit.added_vectors,
                                                      strict=True):
                live[path, vector_id(vector)] = written.get(path, version)
                values[path], vectors[path] = partition_values, vector
            last = version
        paths = [path for path, _ in live]
        return Snapshot(last, [(version, path) for (path, _), version in live.items()],
                        {path: dict(values[path]) for path in paths if values.get(path)},
                        {path: json.loads(vectors[path]) for path in paths if vectors.get(path)})

    def data_path(self, path: str) -> str:
        """A data file's path on the volume, from its name in the log (relative and URL-encoded, or a
        file: URI)."""
        parsed = urlparse(path)
        if parsed.scheme in ("file", ""):
            local = unquote(parsed.path)
            return local if local.startswith("/") else f"{self.table}/{local}"
        raise BadInput(f"Delta table {self.table}: data file {path} is not on the run's volume")
