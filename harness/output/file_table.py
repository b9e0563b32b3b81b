"""What the readers of file-based tables (Delta, Iceberg, Paimon, Hudi) do alike as outputs, whatever their
format: a table is a folder of the run's files, each commit a new file in a folder of its own (Delta's log,
Iceberg's metadata, Paimon's snapshots, Hudi's timeline) that the driver is held at and the watcher polls,
each partition read one data file of the committed table, and a commit's change the table before and after
it. A reader says its format (its commits' folder and file name, how it reads a version's rows); the rest
is here once, so the stores' readers cannot drift apart in what the harness asks of every table.

A store's module, not the role's: its watcher is the run's (harness.run.table_watch)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from harness.errors import BadInput
from harness.output.base import EngineSource, Hold, OnCommit, Watcher, holds_folder
from harness.output.commits import Commit, Files, State

if TYPE_CHECKING:
    from harness.history import History
    from harness.output.base import CheckpointFolder
    from harness.run.table_watch import GateHolds


def state_of(columns: Iterable[tuple[Sequence[bytes | None], Sequence[bytes]]]) -> State:
    """Each key's values in these rows, given as (keys, values) columns: one value for a state table that
    keeps one row per key, to tell a batch's repeat that changed nothing from one applied again."""
    state: State = {}
    for keys, values in columns:
        for key, value in zip(keys, values, strict=True):
            state.setdefault(key, []).append(value)
    return state


class FileTable(ABC):
    """A scenario's table at `path` of `files` (the run's volume through the relay, or its S3 server's
    bucket), read back by a reader of its format."""

    name: str  # the --output it is, and Spark's format for the table
    label: str  # as errors name it: "<label> table <where>"
    commits_folder: str  # the folder of the table each commit's file appears in
    commit_file: re.Pattern[str]  # that file's name, its version the first group (ASCII digits)
    ordered = False  # a table keeps no row order: its files' rows are not judged for a key's sequence

    def __init__(self, files: Files, path: str) -> None:
        self.files = files
        self.where = path.rstrip("/")
        self.added_by: list[int | None] = []  # partition (a data file read) -> the version that added it

    @abstractmethod
    def versions_now(self) -> list[int]:
        """The versions committed so far, in order (its table.committed watcher polls them)."""

    @abstractmethod
    def commit(self, version: int) -> Commit:
        """What one version did."""

    @abstractmethod
    def spark_settings(self) -> dict[str, str]:
        """The Spark settings the driver's session starts with for this table (extensions, catalogs)."""

    @abstractmethod
    def state_at(self, version: int) -> State:
        """The table as of `version` (empty before the first): each key's values."""

    def prepare(self) -> None:
        """Nothing to make (the sink creates the table); a table already there is refused."""
        if self.files.walk(self.where):
            raise BadInput(f"{self.label} table {self.where} already exists: each scenario writes a table of its own")

    def engine_source(self) -> EngineSource | None:
        return EngineSource(self.name, self.where, self.spark_settings())

    def hold(self) -> Hold | None:
        return Hold(f"{self.where}/{self.commits_folder}", self.commit_file.pattern, holds_folder(self.where))

    def watch(self, folder: CheckpointFolder, history: History, on_commit: OnCommit,
              at_gate: GateHolds | None) -> Watcher | None:
        """The driver held at each commit where it can be (`hold`), else the gate's holds (object storage)."""
        from harness.run.table_watch import DriverHolds, TableWatcher

        holds = DriverHolds(self.files, holds_folder(self.where)) if self.hold() is not None else at_gate
        return TableWatcher(self, holds, folder, history, on_commit).start()

    def listing(self) -> list[str]:
        """The names in the commits' folder (none when the sink never committed)."""
        return [name for name in self.files.walk(f"{self.where}/{self.commits_folder}") if "/" not in name]

    def commit_of(self, partition: int) -> int | None:
        return self.added_by[partition]

    def file_of(self, partition: int) -> str | None:
        return None  # on the run's volume

    def change_of(self, version: int) -> tuple[State, State]:
        """The table as of the version before `version` and as of `version` (a version is the whole table)."""
        return self.state_at(version - 1), self.state_at(version)


class CatalogTable(FileTable):
    """A file-based table Spark names in a catalog of its own whose warehouse is beside the query's checkpoint
    (Iceberg's Hadoop catalog, Paimon's filesystem catalog): the context names it, the session makes the
    catalog."""

    identifier: str  # the context's table_name: one warehouse per scenario
    catalog_settings: Callable[[str], dict[str, str]]  # the session's catalog and extensions, for a checkpoint

    def __init__(self, files: Files, path: str, checkpoint: str = "") -> None:
        """`checkpoint`: the query's, which the catalog's warehouse is beside."""
        super().__init__(files, path)
        self.checkpoint = checkpoint

    def context(self) -> dict[str, object]:
        return {"table_name": self.identifier, "table_path": self.where}

    def spark_settings(self) -> dict[str, str]:
        return self.catalog_settings(self.checkpoint)
