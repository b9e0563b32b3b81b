"""A store the harness finds from outside it: Spark's file sink (`format("parquet")`), a folder of Parquet
files on the run's volume that the sink's `_spark_metadata` log commits. It plugs in as any team's store
would, through the `eo_harness.outputs` entry point in its pyproject.toml; nothing in the harness names it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.output.base import Output, Place
from harness.output.store_defaults import StoreDefaults

if TYPE_CHECKING:
    from harness.versions import Stack


class FilesStore(StoreDefaults):
    """Spark's own sink on every Spark line, no jar, no server: only what is its own is said here."""

    name = "files"
    label = "Spark's file sink"
    table = True  # a commit (a batch's log file) the driver writes: the table commit point applies
    state_tables = False
    description = "files (Parquet files in a folder on the run's volume, as Spark's file sink log names them)"

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        return {}  # Spark's own: the run's Spark version says it

    def jars(self, stack: Stack) -> tuple[str, ...]:
        return ()

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        return {"table.committed": frozenset({"driver"})}  # the driver writes each batch's log file

    def output(self, place: Place) -> Output:
        from eo_files.folder import FileFolder

        return FileFolder(place.files, f"{place.checkpoint}-files")


STORE = FilesStore()
