"""What every table output's history is made of: one store commit (a Delta version, an Iceberg or Paimon
snapshot, a PostgreSQL transaction's rows of one batch), the rows of a table as of one, and the files a
table is read from."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from harness.errors import BadInput

T = TypeVar("T")


class Files(Protocol):
    """Where the table is read from: the run's volume through the relay (harness.gate.relay_files)."""

    def walk(self, path: str) -> list[str]: ...

    def read_bytes(self, path: str) -> bytes: ...


class TableCorrupt(Exception):  # noqa: N818 - what the table is, as the anomaly names it
    """A file the table's committed state names is not there (a data file of its snapshot, the metadata its
    catalog points at): the table cannot be read. The sink's failure, never the harness's."""

    def __init__(self, where: str, missing: str, error: str | None = None) -> None:
        super().__init__(f"{where}: {missing} is named by the committed table and is not there" if error is None
                         else f"{where}: {missing} cannot be read ({error})")
        self.where = where
        self.missing = missing
        self.error = error


@contextmanager
def parsed(where: str, what: str = "a file of the committed table") -> Iterator[None]:
    """Parse what the sink wrote: the table's files may hold anything, so any error in reading them but the
    harness's own (bad input it refuses by name, a relay that did not answer) is the table's, `TableCorrupt`
    naming `what` was read."""
    try:
        yield
    except (TableCorrupt, BadInput, OSError):
        raise
    except Exception as error:  # noqa: BLE001 - a crafted file raises whatever its parser raises
        raise TableCorrupt(where, what, f"{type(error).__name__}: {str(error)[:200]}") from error


def decoded(where: str, path: str, rows: Iterable[T]) -> Iterator[T]:
    """A data file's rows as they are decoded; what its decoding raises (a bomb refused past the bound, bytes
    that are not its format) is that file's corruption, `TableCorrupt` naming it."""
    with parsed(where, path):
        yield from rows


def gone(error: OSError) -> bool:
    """Whether a read failed because the file is not there (the relay says so in words; S3 raises it)."""
    return isinstance(error, FileNotFoundError) or "FileNotFoundError" in str(error)


def table_file(files: Files, path: str, where: str) -> bytes:
    """A file the committed table names, whole; TableCorrupt when it is not there."""
    try:
        return files.read_bytes(path)
    except OSError as error:
        if gone(error):
            raise TableCorrupt(where, path) from error
        raise


State = dict[bytes | None, list[bytes | None]]  # a table's rows as of one commit: key -> its rows' values
# an added file's partition values (a partitioned table keeps those columns in the log, not in its files)
PartitionValues = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True)
class Commit:
    """One commit of a table: a Delta version, as its log entry says (or a PostgreSQL transaction's rows of
    one batch: harness.output.postgres; an Iceberg or Paimon snapshot)."""

    version: int
    operation: str | None = None  # commitInfo.operation: WRITE, STREAMING UPDATE, MERGE, ...
    app_id: str | None = None  # the txn action's appId
    txn_version: int | None = None  # the txn action's version (a batch id for the writers above)
    query_id: str | None = None  # commitInfo.operationParameters.queryId (Spark's Delta sink)
    epoch: int | None = None  # commitInfo.operationParameters.epochId: the batch id (Spark's Delta sink)
    added: tuple[str, ...] = ()  # data files added, as the log names them
    added_values: tuple[PartitionValues, ...] = ()  # each added file's partition values (none: unpartitioned)
    added_vectors: tuple[str | None, ...] = ()  # each added file's deletion vector (JSON), None without one
    removed: tuple[str, ...] = ()
    removed_vectors: tuple[str | None, ...] = ()  # the deletion vector each removed file had
    timestamp_ms: int = 0  # commitInfo.timestamp: when the writer committed it
    rows: int = 0  # rows it wrote, where the store says (a PostgreSQL transaction's rows of the batch)
    # other commits of the same batch whose rows this one's repeat (the same key and value), where the store
    # can tell: a PostgreSQL batch may be committed in parts (one transaction per partition), so only a
    # repeat is a second write; None where a commit is a whole batch (a Delta version), so two are two writes
    repeats: tuple[int, ...] | None = None
    named_by: str = ""  # where its batch id came from, where not a Delta log's txn or commitInfo
    snapshot_id: int | None = None  # the store's own id of the snapshot it made (Iceberg, Paimon); None elsewhere
    # it only moves rows, as the format records (Delta's OPTIMIZE: every add and remove `dataChange: false`;
    # Iceberg's `replace`; Hudi's clustering and compaction; Paimon's COMPACT): it writes no batch
    rewrite: bool = False

    @property
    def batch(self) -> int | None:
        """The streaming batch this version says it holds, None when it says none (a rewrite holds none,
        whatever identifier it carries on from the commit before it)."""
        if self.rewrite:
            return None
        return self.txn_version if self.txn_version is not None else self.epoch

    @property
    def said_by(self) -> str | None:
        """Where the batch id came from: `txn`, `commitInfo`, `named_by` (a row's `batch_id`), or None."""
        if self.named_by:
            return self.named_by
        return "txn" if self.txn_version is not None else "commitInfo" if self.epoch is not None else None
