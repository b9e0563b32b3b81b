"""An Iceberg table in the run's REST catalog, its files on the run's S3 server (`--store s3`): read as the
volume's table is (harness.output.iceberg.table), its versions the catalog's."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from harness.errors import BadInput
from harness.output.base import EngineSource, Hold
from harness.output.commits import Files, table_file
from harness.output.iceberg.table import IcebergTable

if TYPE_CHECKING:
    from pyiceberg.table.metadata import TableMetadata


def object_path(location: str) -> str:
    """A file Iceberg's metadata names on the run's S3 server (`s3://bucket/key`), as `bucket/key`."""
    parsed = urlparse(location)
    if parsed.scheme not in ("s3", "s3a"):
        raise BadInput(f"Iceberg file {location} is not on the run's S3 server")
    return parsed.netloc + parsed.path


class RestIcebergTable(IcebergTable):
    """An Iceberg table in the run's REST catalog, its files on the run's S3 server (`--store s3`). Its
    versions are the catalog's: the current metadata file the catalog points at, and those its metadata log
    names before it (a metadata file no commit made current is none of them, however it is named), each
    numbered as its name is (`<version>-<uuid>.metadata.json`: the log keeps only the latest ones)."""

    path_of = staticmethod(object_path)

    def file_of(self, partition: int) -> str | None:
        return object_path(self.paths[partition])

    def __init__(self, files: Files, catalog: Any, namespace: str, table: str, settings: dict[str, str]) -> None:
        """`catalog`: harness.output.iceberg.rest.RestCatalog; `settings`: the session's, naming it."""
        super().__init__(files, f"{namespace}.{table}")
        self.catalog = catalog
        self.namespace = namespace
        self.table = table
        self.settings = settings
        self._current_file: str | None = None
        self._chain: dict[int, str] = {}  # version -> its metadata file, as the current one's log names them

    def prepare(self) -> None:
        """The scenario's namespace made in the catalog (the sink creates the table); one there is refused."""
        if not self.catalog.create_namespace(self.namespace):
            raise BadInput(f"Iceberg namespace {self.namespace} already exists: each scenario writes a table "
                           "of its own")

    def context(self) -> dict[str, object]:
        from harness.output.iceberg import CATALOG

        return {"table_name": f"{CATALOG}.{self.namespace}.{self.table}", "table_path": ""}

    def spark_settings(self) -> dict[str, str]:
        return self.settings

    def engine_source(self) -> EngineSource | None:
        """The table by its name in the catalog, read from the catalog and the S3 server directly."""
        from harness.output.iceberg import CATALOG

        return EngineSource("", f"{CATALOG}.{self.namespace}.{self.table}", self.catalog.spark_settings(direct=True),
                            infrastructure=True)

    def hold(self) -> Hold | None:
        return None  # no folder to watch: a REST commit is the gate's to see

    def versions_now(self) -> list[int]:
        current = self.catalog.metadata_location(self.namespace, self.table)
        if current is not None and current != self._current_file:
            from pyiceberg.table.metadata import TableMetadataUtil

            metadata = TableMetadataUtil.parse_raw(table_file(self.files, self.path_of(current), self.where).decode())
            for location in [entry.metadata_file for entry in metadata.metadata_log] + [current]:
                version = catalog_version(location)
                if version is not None:
                    self._chain.setdefault(version, location)  # a version's file, once committed, stays
            self._current_file = current
        return sorted(self._chain)

    def _metadata(self, version: int) -> TableMetadata:
        from pyiceberg.table.metadata import TableMetadataUtil

        if version not in self._chain:
            self.versions_now()
        if version not in self._chain:
            raise OSError(f"no metadata version {version} in the catalog's chain")
        return TableMetadataUtil.parse_raw(self.files.read_bytes(self.path_of(self._chain[version])).decode())

    @property
    def looked_for(self) -> str:
        return "the REST catalog has no such table"


CATALOG_FILE = re.compile(r"^([0-9]{5,})-[0-9a-f-]+\.(?:gz\.)?metadata\.json$")  # a catalog's: version, uuid


def catalog_version(location: str) -> int | None:
    """The version a catalog's metadata file is named with, None for a name of another form."""
    found = CATALOG_FILE.match(location.rpartition("/")[2])
    return int(found[1]) if found else None
