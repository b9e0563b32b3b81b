"""The Hudi table output read through stand-in relay files from tables real Hudi wrote (Spark 3.5.7, Hudi
1.2.0: fixtures/hudi/make.py): its timeline's completed writes and their batches, the latest file slices'
rows (never a listing of data files), each instant's state, and tables it cannot read refused."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest

from harness.errors import BadInput
from harness.output.hudi.table import TIMELINE, HudiTable, epoch_ms, parse_commit
from suites.unit.test_delta_output import StandInFiles

pytestmark = pytest.mark.unit
TABLE = "/checkpoints/s-table"
FIXTURES = Path(__file__).parent / "fixtures" / "hudi"


def fixture(name: str) -> StandInFiles:
    """A table of fixtures/hudi/ on the stand-in volume at TABLE."""
    files = StandInFiles()
    for path in sorted((FIXTURES / name).rglob("*")):
        if path.is_file():
            files.write(f"{TABLE}/{path.relative_to(FIXTURES / name).as_posix()}", path.read_bytes())
    return files


def rows(table: HudiTable) -> list[tuple[int, int, bytes | None, bytes]]:
    read = table.read(lambda batch: None)
    return [(r.partition(), r.offset(), r.key(), r.value()) for r in read.records]


def base_files(files: StandInFiles) -> list[str]:
    """The table's base files by name, oldest instant first."""
    return sorted((name for name in files.walk(TABLE) if name.endswith(".parquet")), key=lambda n: n.split("_")[-1])


def test_a_streaming_sink_s_commits_name_their_batches() -> None:
    """HoodieStreamingSink writes `_hudi_streaming_sink_checkpoint` = {identifier: batch id} in each commit's
    extraMetadata; each micro-batch inserted into the one small file group, a new base file of it each time."""
    files = fixture("streaming")
    table = HudiTable(files, TABLE)
    commits = table.commits()
    assert [c.version for c in commits] == table.versions_now() and len(commits) == 3
    assert [(c.batch, c.said_by, c.app_id, c.query_id) for c in commits] == [
        (batch, "extraMetadata", "default_single_writer", None) for batch in range(3)]
    assert [(c.operation, c.rows) for c in commits] == [("INSERT", 2), ("INSERT", 1), ("INSERT", 1)]
    assert [c.added for c in commits] == [(name,) for name in base_files(files)]
    for commit in commits:  # completed after it was requested, from the name `<requested>_<completed>.commit`
        assert 0 < commit.timestamp_ms - epoch_ms(str(commit.version)) < 60_000
    assert table.commit(commits[1].version) == commits[1]


def test_batch_writes_name_no_batch() -> None:
    commits = HudiTable(fixture("batch"), TABLE).commits()
    assert [(c.batch, c.said_by, c.operation, c.rows) for c in commits] == [(None, None, "INSERT", 2),
                                                                         (None, None, "INSERT", 1)]


def test_rows_of_the_latest_slice_of_each_file_group() -> None:
    """A base file is a partition: the streaming table's one file group holds every batch's rows in its
    newest base file (the older ones are earlier slices, not read); the batch table has a group a write."""
    files = fixture("streaming")
    table = HudiTable(files, TABLE)
    read = table.read(lambda batch: None)
    assert [(r.partition(), r.offset(), r.key(), r.value()) for r in read.records] == [
        (0, 0, b"s1", b"a1"), (0, 1, b"s2", b"a2"), (0, 2, b"s3", b"a3"), (0, 3, b"s4", b"a4")]
    assert read.stable == read.high == {0: 4} and not read.stuck
    last = table.commits()[-1]
    assert table.commit_of(0) == last.version and set(read.records.timestamps) == {last.timestamp_ms}
    batch = HudiTable(fixture("batch"), TABLE)
    assert rows(batch) == [(0, 0, b"k1", b"v1"), (0, 1, b"k2", b"v2"), (1, 0, b"k3", b"v3")]
    assert [batch.commit_of(p) for p in (0, 1)] == batch.versions_now()


def test_each_instant_s_state() -> None:
    table = HudiTable(fixture("streaming"), TABLE)
    first, second, _ = table.versions_now()
    assert table.state_at(first - 1) == {}
    assert table.state_at(first) == {b"s1": [b"a1"], b"s2": [b"a2"]}
    assert table.change_of(second) == (table.state_at(first), {b"s1": [b"a1"], b"s2": [b"a2"], b"s3": [b"a3"]})


def test_versions_are_completed_writes_only_and_their_files_only_are_read() -> None:
    """A pending instant (a writer that failed or is still writing) and its base file, a completed write's
    file group written again by a zombie task (another write token), other actions and names: not versions,
    and not read."""
    files = fixture("streaming")
    table = HudiTable(files, TABLE)
    found = table.versions_now()
    newest = base_files(files)[-1]
    group, _, instant = newest.removesuffix(".parquet").split("_")
    pending = found[-1] + 1000
    for name in (f"{pending}.commit.requested", f"{pending}.inflight", f"{pending}_{pending + 5}.clean",
                 f"{pending}.clean.requested", f"{pending}_x.commit", "٣_1.commit", "hoodie.properties",
                 "history/manifest_1"):
        files.write(f"{TABLE}/{TIMELINE}/{name}", b"")
    for stray in (f"{group}_0-99-99_{pending}", f"{group[:-1]}9_0-99-99_{pending}"):  # a slice, a new group
        files.write(f"{TABLE}/{stray}.parquet", files.read_bytes(f"{TABLE}/{base_files(files)[0]}"))
    files.write(f"{TABLE}/{group}_9-9-9_{instant}.parquet", files.read_bytes(f"{TABLE}/{base_files(files)[0]}"))
    assert table.versions_now() == found
    assert [key for _, _, key, _ in rows(table)] == [b"s1", b"s2", b"s3", b"s4"]


def test_a_file_group_older_than_the_timeline_is_read() -> None:
    """Hudi archives old instants out of the timeline: a base file older than its first instant is of a
    completed write (its commit no longer in the history)."""
    files = fixture("batch")
    first = HudiTable(files, TABLE).versions_now()[0]
    for name in [n for n in files.walk(f"{TABLE}/{TIMELINE}") if n.startswith(str(first))]:
        del files.data[f"{TABLE}/{TIMELINE}/{name}"]
    table = HudiTable(files, TABLE)
    assert rows(table) == [(0, 0, b"k1", b"v1"), (0, 1, b"k2", b"v2"), (1, 0, b"k3", b"v3")]
    assert table.commit_of(0) == first and [c.version for c in table.commits()] == [table.commit_of(1)]


def test_a_slice_the_cleaner_deleted_is_named() -> None:
    files = fixture("streaming")
    first = base_files(files)[0]
    del files.data[f"{TABLE}/{first}"]
    table = HudiTable(files, TABLE)
    assert len(rows(table)) == 4  # the latest slices are kept
    with pytest.raises(BadInput, match=f"are gone .*{first}.*cleaner"):
        table.state_at(table.versions_now()[0])


def test_a_replacecommit_s_replaced_file_groups_leave_the_table() -> None:
    schema = {"type": "record", "name": "HoodieReplaceCommitMetadata", "fields": [
        {"name": "operationType", "type": "string"},
        {"name": "partitionToReplaceFileIds", "type": {"type": "map", "values": {"type": "array", "items": "string"}}}]}
    data = io.BytesIO()
    fastavro.writer(data, schema, [{"operationType": "INSERT_OVERWRITE", "partitionToReplaceFileIds": {"": ["g1"]}}])
    commit, replaced = parse_commit("20261126221843414_20261126221854835.replacecommit", data.getvalue())
    assert (commit.version, commit.operation, commit.added, commit.batch, replaced) == (
        20261126221843414, "INSERT_OVERWRITE", (), None, {("", "g1")})
    assert commit.timestamp_ms == epoch_ms("20261126221854835") == 1795731534835


@pytest.mark.parametrize(("operation", "rewrite"), [("CLUSTER", True), ("COMPACT", True), ("INSERT_OVERWRITE", False),
                                                   ("UPSERT", False)])
def test_clustering_and_compaction_are_rewrites_and_writes_are_not(operation: str, rewrite: bool) -> None:
    schema = {"type": "record", "name": "HoodieReplaceCommitMetadata", "fields": [
        {"name": "operationType", "type": "string"},
        {"name": "partitionToReplaceFileIds", "type": {"type": "map", "values": {"type": "array", "items": "string"}}}]}
    data = io.BytesIO()
    fastavro.writer(data, schema, [{"operationType": operation, "partitionToReplaceFileIds": {"": ["g1"]}}])
    commit, _ = parse_commit("20261126221843414_20261126221854835.replacecommit", data.getvalue())
    assert commit.rewrite is rewrite and commit.batch is None


def test_no_table_at_the_path_names_where_the_harness_looked() -> None:
    with pytest.raises(BadInput, match="no Hudi table at /checkpoints/s-table .*.hoodie/hoodie.properties"):
        HudiTable(StandInFiles(), TABLE).read(lambda batch: None)


def test_a_merge_on_read_table_is_read_through_hudi_rs_file_slice_by_file_slice() -> None:
    """hudi-rs merges each file slice (here base files alone: the same rows as the copy-on-write read); the
    merge of log files is checked against Spark's own read in the suites (suites/test_tables.py)."""
    pytest.importorskip("hudi")
    copy_on_write = HudiTable(fixture("batch"), TABLE).read(lambda batch: None)
    files = fixture("batch")
    properties = f"{TABLE}/.hoodie/hoodie.properties"
    files.write(properties, files.read_bytes(properties).replace(b"=COPY_ON_WRITE", b"=MERGE_ON_READ"))
    table = HudiTable(files, TABLE)
    merged = table.read(lambda batch: None)
    assert sorted((r.key(), r.value()) for r in merged.records) == sorted(
        (r.key(), r.value()) for r in copy_on_write.records) != []
    first = table.versions_now()[0]
    assert sum(map(len, table.state_at(first).values())) < len(merged.records)  # as of the first instant
