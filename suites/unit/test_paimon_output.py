"""The Paimon table output read from its snapshots and manifests through stand-in relay files, on tables
real Paimon 0.9 wrote from Spark 3.5 (fixtures/paimon/make.py): rows of the latest snapshot, each
snapshot's commit and the batch it names (none for Paimon's own Spark sink), and what is refused."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from harness.errors import BadInput
from harness.output.paimon.table import PaimonTable, versions, volume_path
from suites.unit.test_delta_output import StandInFiles

pytestmark = pytest.mark.unit
FIXTURE = Path(__file__).parent / "fixtures" / "paimon" / "warehouse"
WAREHOUSE = "/checkpoints/s-warehouse"


def warehouse() -> StandInFiles:
    """The fixture's warehouse, as the relay would give it from the run's volume."""
    files = StandInFiles()
    for path in sorted(FIXTURE.rglob("*")):
        if path.is_file():
            files.write(f"{WAREHOUSE}/{path.relative_to(FIXTURE).as_posix()}", path.read_bytes())
    return files


def table(name: str, files: StandInFiles | None = None) -> PaimonTable:
    return PaimonTable(files or warehouse(), f"{WAREHOUSE}/default.db/{name}")


def snapshot(paimon: PaimonTable, version: int) -> dict:
    return json.loads(paimon.files.read_bytes(f"{paimon.where}/snapshot/snapshot-{version}"))


def test_rows_of_the_latest_snapshot_become_records_a_file_a_partition() -> None:
    paimon = table("batch_append")
    batches: list[list] = []
    read = paimon.read(batches.append)
    assert [(r.partition(), r.offset(), r.key(), r.value()) for r in read.records] == [
        (0, 0, b"k0-0", b'{"batch": 0, "i": 0}'), (0, 1, b"k0-1", b'{"batch": 0, "i": 1}'),
        (1, 0, b"k1-0", b'{"batch": 1, "i": 0}'), (1, 1, b"k1-1", b'{"batch": 1, "i": 1}')]
    assert read.stable == read.high == {0: 2, 1: 2} and not read.stuck and sum(map(len, batches)) == 4
    assert [paimon.commit_of(0), paimon.commit_of(1)] == [1, 2]  # each file's snapshot: the time of its rows
    first, second = (snapshot(paimon, version)["timeMillis"] for version in (1, 2))
    assert list(read.records.timestamps) == [first, first, second, second]


def test_a_batch_write_names_no_batch_nor_does_paimon_s_spark_sink() -> None:
    """Paimon 0.9's Spark sink commits each micro-batch as a batch write: Long.MAX_VALUE, a new commitUser."""
    for name, count in (("batch_append", 2), ("streaming_append", 3)):
        paimon = table(name)
        commits = paimon.commits()
        assert [(c.version, c.snapshot_id, c.operation, c.rows, c.batch, c.said_by) for c in commits] == [
            (v, v, "APPEND", 2, None, None) for v in range(1, count + 1)]
        assert all(snapshot(paimon, c.version)["commitIdentifier"] == 2**63 - 1 for c in commits)
        assert len({c.app_id for c in commits}) == count
        assert all(len(c.added) == 1 and not c.removed for c in commits)
        assert [c.timestamp_ms for c in commits] == [snapshot(paimon, c.version)["timeMillis"] for c in commits]
        assert [r.key() for r in paimon.read(lambda batch: None).records][-1] == (
            b"k1-1" if name == "batch_append" else b"s2-1")


def test_a_stream_commit_names_its_batch_by_its_commit_identifier() -> None:
    """A foreachBatch writer through Paimon's StreamWriteBuilder commits each batch under its batch id."""
    paimon = table("foreach_batch")
    assert [(c.version, c.batch, c.said_by, c.app_id) for c in paimon.commits()] == [
        (1, 0, "commitIdentifier", "fixture-query"), (2, 1, "commitIdentifier", "fixture-query"),
        (3, 2, "commitIdentifier", "fixture-query")]
    assert paimon.commit(3) == paimon.commits()[2]  # the watcher's look at a new snapshot
    read = paimon.read(lambda batch: None)
    assert [(r.partition(), r.key(), r.value()) for r in read.records][::2] == [
        (0, b"s0-0", b"v0-0"), (1, b"s1-0", b"v1-0"), (2, b"s2-0", b"v2-0")]


def test_the_table_as_of_a_snapshot_and_what_a_snapshot_changed() -> None:
    paimon = table("foreach_batch")
    assert paimon.state_at(0) == {}
    assert paimon.state_at(1) == {b"s0-0": [b"v0-0"], b"s0-1": [b"v0-1"]}
    before, after = paimon.change_of(2)
    assert before == paimon.state_at(1) and after == {**before, b"s1-0": [b"v1-0"], b"s1-1": [b"v1-1"]}


def test_a_file_of_an_expired_snapshot_is_read_without_its_commit() -> None:
    """Snapshot 1 expired: its file is still in snapshot 2's base manifest list, its snapshot unknown."""
    files = warehouse()
    paimon = table("batch_append", files)
    del files.data[f"{paimon.where}/snapshot/snapshot-1"]
    read = paimon.read(lambda batch: None)
    assert [c.version for c in paimon.commits()] == [2] and [paimon.commit_of(0), paimon.commit_of(1)] == [None, 2]
    assert list(read.records.timestamps) == [0, 0] + [snapshot(paimon, 2)["timeMillis"]] * 2


def test_snapshot_ids_from_a_listing_other_names_ignored() -> None:
    names = ["snapshot/snapshot-2", "snapshot-10", "snapshot/EARLIEST", "LATEST", "snapshot-\u0661", "snapshot-3.tmp",
             "snapshot-", "manifest/snapshot-4", "snapshot/snapshot-\uff15"]
    assert versions(names) == PaimonTable.versions(names) == [2, 10]
    paimon = table("streaming_append")
    assert paimon.versions(paimon.listing()) == [1, 2, 3]


def avro(records: list[dict], fields: list[dict]) -> bytes:
    """An Avro file of the manifest fields this reader takes (Paimon's own have many more)."""
    out = io.BytesIO()
    fastavro.writer(out, {"type": "record", "name": "record", "fields": fields}, records)
    return out.getvalue()


MANIFEST_LIST = [{"name": "_FILE_NAME", "type": "string"}]
MANIFEST = [{"name": "_KIND", "type": "int"},
            {"name": "_FILE", "type": {"type": "record", "name": "file",
                                       "fields": [{"name": "_FILE_NAME", "type": "string"}]}}]


def compacted(files: StandInFiles, paimon: PaimonTable, merged: str) -> dict:
    """Snapshot 4, as a compaction writes it: its base is snapshot 3's manifests, its delta deletes snapshot
    3's files and adds `merged`; snapshot 3 returned."""
    last = snapshot(paimon, 3)
    manifest = f"{paimon.where}/manifest"
    base = [record["_FILE_NAME"] for manifests in (last["baseManifestList"], last["deltaManifestList"])
            for record in fastavro.reader(io.BytesIO(files.read_bytes(f"{manifest}/{manifests}")))]
    written = [name for commit in paimon.commits() for name in commit.added]
    files.write(f"{manifest}/list-base", avro([{"_FILE_NAME": name} for name in base], MANIFEST_LIST))
    files.write(f"{manifest}/list-delta", avro([{"_FILE_NAME": "compacted"}], MANIFEST_LIST))
    files.write(f"{manifest}/compacted", avro([{"_KIND": 1, "_FILE": {"_FILE_NAME": name}} for name in written]
                                              + [{"_KIND": 0, "_FILE": {"_FILE_NAME": merged}}], MANIFEST))
    files.write(f"{paimon.where}/snapshot/snapshot-4", json.dumps(
        {**last, "id": 4, "commitKind": "COMPACT", "baseManifestList": "list-base", "deltaManifestList": "list-delta",
         "timeMillis": last["timeMillis"] + 5}).encode())
    return last


def test_a_compaction_rewrites_files_and_names_no_batch() -> None:
    """A COMPACT snapshot deletes the files it merged and adds the merged one (here ORC); its rows are then
    that snapshot's file, and it is no batch's write though it carries the identifier it followed."""
    files = warehouse()
    paimon = table("foreach_batch", files)
    written = tuple(name for commit in paimon.commits() for name in commit.added)
    last = compacted(files, paimon, "data-merged-0.orc")
    out = io.BytesIO()
    orc.write_table(pa.table({"value": ["a", None], "key": ["k", "k"]}), out)
    files.write(f"{paimon.where}/bucket-0/data-merged-0.orc", out.getvalue())
    compaction = paimon.commit(4)
    assert (compaction.operation, compaction.batch, compaction.said_by, compaction.rewrite) == ("COMPACT", None, None,
                                                                                               True)
    assert (compaction.removed, compaction.added) == (written, ("data-merged-0.orc",))
    read = paimon.read(lambda batch: None)
    assert [(r.partition(), r.offset(), r.key(), r.value(), r.timestamp()[1]) for r in read.records] == [
        (0, 0, b"k", b"a", last["timeMillis"] + 5), (0, 1, b"k", b"", last["timeMillis"] + 5)]  # null: unreadable
    assert paimon.commit_of(0) == 4 and len(paimon.state_at(3)) == 6


def test_a_data_file_of_another_format_or_without_key_and_value_is_named() -> None:
    files = warehouse()
    paimon = table("foreach_batch", files)
    compacted(files, paimon, "data-merged-0.avro")
    files.write(f"{paimon.where}/bucket-0/data-merged-0.avro", b"")
    with pytest.raises(BadInput, match="data-merged-0.avro is in a format the harness does not read"):
        paimon.read(lambda batch: None)
    files = warehouse()
    paimon = table("batch_append", files)
    out = io.BytesIO()
    pq.write_table(pa.table({"id": [1], "value": ["x"]}), out)
    files.write(f"{paimon.where}/bucket-0/{paimon.commit(1).added[0]}", out.getvalue())
    with pytest.raises(BadInput, match="no column key .*it has id, value"):
        paimon.read(lambda batch: None)


def test_a_primary_key_table_written_by_paimon_is_read_merged_and_keyed() -> None:
    paimon = table("primary_key")
    read = paimon.read(lambda batch: None)
    assert [(r.key(), r.value()) for r in read.records] == [(b"k", b"v")] and paimon.keyed
    assert not table("foreach_batch").keyed


def key_values(rows: list[tuple[str, int, int, str]]) -> bytes:
    """A primary-key table's data file: (key, sequence number, RowKind byte, value) per row."""
    out = io.BytesIO()
    pq.write_table(pa.table({"_KEY_key": [r[0] for r in rows], "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows],
                                                                                             pa.int64()),
                             "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8()),
                             "key": [r[0] for r in rows], "value": [r[3] for r in rows]}), out)
    return out.getvalue()


@pytest.mark.parametrize(("engine", "wanted"), [("deduplicate", {b"a": b"a2", b"c": b"c1"}),
                                                 ("first-row", {b"a": b"a0", b"b": b"b0", b"c": b"c1"})])
def test_the_merge_keeps_each_key_s_write_its_engine_keeps_and_drops_retractions(engine: str, wanted: dict) -> None:
    from harness.output.paimon.merge import superseded

    level0 = key_values([("a", 0, 0, "a0"), ("b", 1, 0, "b0")])
    level1 = key_values([("a", 2, 2, "a2"), ("b", 3, 3, "b-deleted"), ("c", 4, 0, "c1")])
    files = [("f0", lambda: (level0, False)), ("f1", lambda: (level1, False))]
    left_out = superseded(files, ["key"], engine, "t")  # type: ignore[arg-type]
    kept = {}
    for name, data in (("f0", level0), ("f1", level1)):
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
        kept.update({row["key"].encode(): row["value"].encode() for n, row in enumerate(rows)
                     if n not in left_out.get(name, frozenset())})
    assert kept == wanted


@pytest.mark.parametrize(("options", "named"), [({"merge-engine": "aggregation"}, "merge-engine 'aggregation'"),
                                                ({"merge-engine": "partial-update"}, "merge-engine 'partial-update'"),
                                                ({"sequence.field": "ts"}, "sequence.field 'ts'")])
def test_a_merge_the_harness_does_not_apply_is_refused_by_name(options: dict, named: str) -> None:
    from harness.output.paimon.merge import merge_engine

    with pytest.raises(BadInput, match=named):
        merge_engine(options, "Paimon table t")


def test_no_table_at_the_path_names_where_the_harness_looked_and_an_unwritten_one_is_empty() -> None:
    with pytest.raises(BadInput, match="no Paimon table at /checkpoints/s-warehouse/default.db/none .*schema/"):
        table("none").read(lambda batch: None)
    files = warehouse()
    files.data = {path: data for path, data in files.data.items() if "/snapshot/" not in path}
    read = table("batch_append", files).read(lambda batch: None)
    assert not read.records and read.high == {}


def test_metadata_paths_are_volume_paths() -> None:
    assert volume_path("manifest-list-1", "/v/t/manifest") == "/v/t/manifest/manifest-list-1"
    assert volume_path("file:/v/t/manifest/m-1", "/x") == "/v/t/manifest/m-1"
    with pytest.raises(BadInput, match="not on the run's volume"):
        volume_path("s3://bucket/m-1", "/x")
