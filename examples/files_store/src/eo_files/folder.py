"""One scenario's folder of Parquet files, committed by Spark's file sink log: read as Spark reads it (the
files the log names, never a listing of the folder, where a failed task's file may lie), each batch's log
file a commit whose batch id is its name. The driver is held as each log file appears, so the table commit
point applies as it does to Delta's log."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from eo_files.log import ENTRY, LOG, Entry, batches, files_at, history
from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.errors import BadInput
from harness.output.base import EngineSource
from harness.output.commits import Commit, Files, State, decoded, parsed, table_file
from harness.output.file_table import FileTable
from harness.output.rows import file_rows, read_files


class FileFolder(FileTable):
    """The scenario's folder at `path` of `files` (the run's volume, through the relay). What every file
    table does alike (refusing a folder already there, the driver's hold at each new log file, its watcher)
    is the harness's FileTable; what is Spark's file sink's is here."""

    name = "files"
    label = "Spark's file sink"
    unit = "batch's log file"  # what one of its commits is, in explanations
    keyed = False  # files are appended; nothing sets a row by its key
    commits_folder = LOG
    commit_file = ENTRY

    def __init__(self, files: Files, path: str) -> None:
        super().__init__(files, path)
        self._history: list[Commit] | None = None

    def context(self) -> dict[str, object]:
        return {"table_path": self.where}

    def spark_settings(self) -> dict[str, str]:
        return {}

    def engine_source(self) -> EngineSource | None:
        """Spark's batch read of the folder: it finds the log and reads the files it names."""
        return EngineSource("parquet", self.where, {})

    def _log(self) -> dict[int, str]:
        return batches(self.listing())

    def _text(self, name: str) -> str:
        return self.files.read_bytes(f"{self.where}/{LOG}/{name}").decode()

    def _files_at(self, log: dict[int, str], batch: int) -> dict[str, Entry]:
        with parsed(self.where, f"{self.where}/{LOG}/{log.get(batch, batch)}"):
            return files_at(log, batch, self._text, self.where)

    def versions_now(self) -> list[int]:
        return list(self._log())

    def commit(self, version: int) -> Commit:
        """Batch `version`'s log file (the watcher asks as each appears)."""
        log = self._log()
        return _commit(version, self._files_at(log, max((b for b in log if b < version), default=-1)),
                       self._files_at(log, version))

    def commits(self) -> list[Commit]:
        """Every batch's commit, from one pass over the log (each log file read once)."""
        if self._history is None:
            before: dict[str, Entry] = {}
            self._history = []
            with parsed(self.where, f"{self.where}/{LOG}"):
                for batch, now in history(self._log(), self._text, self.where):
                    self._history.append(_commit(batch, before, now))
                    before = now
        return self._history

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """The files the latest batch's log names: file i is partition i, placed at the time it was written."""
        log = self._log()
        if not log:
            raise BadInput(f"the sink wrote no file sink log at {self.where}/{LOG} on the run's volume: write "
                           "format('parquet') with option('path', context.table_path)")
        entries = list(self._files_at(log, max(log)).values())
        added_by = {path: commit.version for commit in self.commits() for path in commit.added}
        self.added_by = [added_by.get(entry.path) for entry in entries]
        return read_files(len(entries), lambda p: self._rows(p, entries[p]), on_batch)

    def _rows(self, partition: int, entry: Entry) -> Iterator[Records]:
        data = table_file(self.files, entry.path, self.where)
        return decoded(self.where, entry.path, file_rows(data, partition, entry.modified_ms, f"folder {self.where}"))

    def state_at(self, version: int) -> State:
        return {}  # files are appended: no state table's rows to tell a repeat by


def _commit(batch: int, before: dict[str, Entry], now: dict[str, Entry]) -> Commit:
    """A batch's log file as a commit: the files it added to those of the batch before it, and those it removed."""
    added = [entry for path, entry in now.items() if path not in before]
    return Commit(batch, operation="file sink", epoch=batch, added=tuple(e.path for e in added),
                  removed=tuple(path for path in before if path not in now), named_by="the file sink's log",
                  timestamp_ms=max((e.modified_ms for e in added), default=0))
