"""The Iceberg table output read from its metadata through stand-in relay files: versions as Hadoop's
catalog names them, each version's snapshot as a commit (a streaming sink's epoch named), the current
snapshot's rows, and bad input named. The tables are written by pyiceberg itself (a SQL catalog on
SQLite), their metadata files then laid out as `metadata/v<N>.metadata.json`, as Spark's Hadoop catalog
writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from harness.errors import BadInput
from harness.output.iceberg.table import IcebergTable, versions, volume_path

pytestmark = pytest.mark.unit


class LocalFiles:
    """The relay's files over the local disk (the table's paths are its own)."""

    def walk(self, path: str) -> list[str]:
        root = Path(path)
        return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()] if root.is_dir() else []

    def read_bytes(self, path: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except FileNotFoundError as error:
            raise OSError(f"read {path}: FileNotFoundError") from error


SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])


def rows(*pairs: tuple[str, str]) -> pa.Table:
    return pa.table({"key": [k for k, _ in pairs], "value": [v for _, v in pairs]}, schema=SCHEMA)


def written(tmp_path: Path, *appends: tuple[pa.Table, dict[str, str]]) -> IcebergTable:
    """A table appended to once per `appends` (rows, snapshot properties), laid out as Hadoop's catalog
    names its metadata: the create's file v1, each append's v2, v3, ..."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("db")
    table = catalog.create_table("db.output", schema=SCHEMA)
    locations = [table.metadata_location]
    for data, properties in appends:
        table.append(data, snapshot_properties=properties)
        locations.append(table.metadata_location)
    folder = Path(volume_path(table.location()))
    for version, location in enumerate(locations, start=1):
        shutil.copy(volume_path(location), folder / "metadata" / f"v{version}.metadata.json")
    return IcebergTable(LocalFiles(), str(folder))  # type: ignore[arg-type]


def streaming(batch: int) -> dict[str, str]:
    """What Iceberg's streaming sink puts in a snapshot's summary."""
    return {"spark.sql.streaming.queryId": "q", "spark.sql.streaming.epochId": str(batch), "spark.app.id": "app"}


def test_versions_are_the_metadata_files_hadoop_s_catalog_names_in_ascii_digits() -> None:
    assert versions(["v2.metadata.json", "v10.metadata.json", "v1.metadata.json", "version-hint.text",
                     ".v3.metadata.json.crc", "v².metadata.json", "00001-x.metadata.json", "snap-1.avro"]) == [1, 2, 10]


def test_each_version_s_new_snapshot_is_a_commit_naming_the_streaming_batch(tmp_path: Path) -> None:
    table = written(tmp_path, (rows(("a", "1")), streaming(0)), (rows(("b", "2")), streaming(1)))
    create, first, second = table.commits()
    assert (create.version, create.added, create.batch) == (1, (), None)
    assert [(c.version, c.batch, c.query_id, c.app_id, c.operation, c.rows) for c in (first, second)] == [
        (2, 0, "q", "app", "append", 1), (3, 1, "q", "app", "append", 1)]
    assert first.said_by == "summary" and len(first.added) == 1 and first.snapshot_id != second.snapshot_id


def test_a_batch_appended_twice_is_two_commits_of_the_same_batch(tmp_path: Path) -> None:
    table = written(tmp_path, (rows(("a", "1")), streaming(0)), (rows(("a", "1")), streaming(0)))
    assert [c.batch for c in table.commits() if c.added] == [0, 0]
    read = table.read(lambda batch: None)
    assert sorted(r.value() for r in read.records) == [b"1", b"1"]
    assert sorted(map(table.commit_of, (0, 1))) == [2, 3]


def test_rows_of_the_current_snapshot_become_records_a_file_a_partition(tmp_path: Path) -> None:
    table = written(tmp_path, (rows(("a", "1"), ("b", "2")), {}), (rows(("c", "3")), {}))
    batches: list[list] = []
    read = table.read(batches.append)
    assert sorted((r.key(), r.value()) for r in read.records) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert sorted(read.stable.values()) == [1, 2] and read.stable == read.high and sum(map(len, batches)) == 3
    assert [c.batch for c in table.commits()] == [None, None, None]  # a plain append names no batch


def test_a_committed_file_written_again_with_other_rows_is_named_with_both_counts(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    table = written(tmp_path, (rows(("a", "1"), ("b", "2")), streaming(0)), (rows(("c", "3")), streaming(1)))
    assert table.read(lambda batch: None).rewritten == []
    first = next(c for c in table.commits() if c.batch == 0)
    pq.write_table(rows(("x", "9")), volume_path(first.added[0]))  # a replay's task, under the committed name
    read = table.read(lambda batch: None)
    assert read.rewritten == [{"file": first.added[0], "version": first.version, "committed_rows": 2, "rows": 1}]


def test_the_table_as_of_a_version(tmp_path: Path) -> None:
    table = written(tmp_path, (rows(("a", "1")), {}), (rows(("a", "2")), {}))
    assert table.state_at(1) == {} and table.state_at(2) == {b"a": [b"1"]}
    before, after = table.change_of(3)
    assert before == {b"a": [b"1"]} and sorted(after[b"a"]) == [b"1", b"2"]


def test_no_table_is_bad_input_naming_where_the_harness_looked(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="the sink wrote no Iceberg table at .*v<N>.metadata.json"):
        IcebergTable(LocalFiles(), str(tmp_path / "nothing")).read(lambda batch: None)  # type: ignore[arg-type]


def test_a_table_already_there_is_refused(tmp_path: Path) -> None:
    table = written(tmp_path)
    with pytest.raises(BadInput, match="already exists"):
        table.prepare()


def test_a_file_outside_the_volume_is_refused() -> None:
    assert volume_path("file:/checkpoints/s-warehouse/db/output/data/a.parquet") == \
        "/checkpoints/s-warehouse/db/output/data/a.parquet"
    with pytest.raises(BadInput, match="not on the run's volume"):
        volume_path("s3://bucket/a.parquet")


class StandInCatalog:
    """The REST catalog as the table asks it: the current metadata file of a table it knows."""

    def __init__(self, location: str | None) -> None:
        self.location = location

    def metadata_location(self, namespace: str, table: str) -> str | None:
        return self.location


def test_a_rest_catalog_s_versions_are_its_current_metadata_and_the_log_before_it(tmp_path: Path) -> None:
    """pyiceberg's SQL catalog names metadata files as a REST catalog's do (`<version>-<uuid>`); a file no
    commit made current (a failed commit's, a replay's that lost) is no version, however it is named."""
    from pyiceberg.catalog.sql import SqlCatalog

    from harness.output.iceberg.rest_table import RestIcebergTable, catalog_version

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.output", schema=SCHEMA)
    table.append(rows(("k1", "v1")), snapshot_properties=streaming(0))
    table.append(rows(("k2", "v2")), snapshot_properties=streaming(1))
    current = table.metadata_location
    orphan = Path(volume_path(current)).with_name("00002-00000000-0000-0000-0000-000000000000.metadata.json")
    shutil.copy(volume_path(current), orphan)  # the same version as the current one, never committed

    class OnDisk(RestIcebergTable):
        path_of = staticmethod(volume_path)

    rest = OnDisk(LocalFiles(), StandInCatalog(current), "ns", "output", {})  # type: ignore[arg-type]
    assert rest.versions_now() == [0, 1, 2] and catalog_version(current) == 2
    assert [(c.version, c.epoch) for c in rest.commits()] == [(0, None), (1, 0), (2, 1)]
    assert sorted(r.key() for r in rest.read(lambda batch: None).records) == [b"k1", b"k2"]
    assert OnDisk(LocalFiles(), StandInCatalog(None), "ns", "other", {}).versions_now() == []  # type: ignore[arg-type]
