"""The Delta table output read from its log through stand-in relay files: versions and checkpoints, the
latest snapshot's files (never a listing of data files), rows as records, and bad input named."""

from __future__ import annotations

import io
import json
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from harness.errors import BadInput
from harness.output import rows
from harness.output.delta import deletion_vectors
from harness.output.delta.log import DeltaLog, latest_checkpoint, parse_commit, versions
from harness.output.delta.table import DeltaTable, table_path

pytestmark = pytest.mark.unit
TABLE = "/checkpoints/s-table"


class StandInFiles:
    """The relay's files as a dict of path -> bytes."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def walk(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [name.removeprefix(prefix) for name in self.data if name.startswith(prefix)]

    def read_bytes(self, path: str) -> bytes:
        if path not in self.data:
            raise OSError(f"read {path}: FileNotFoundError")
        return self.data[path]

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode()

    def write(self, path: str, data: bytes) -> None:
        self.data[path] = data


def entry(*actions: dict) -> bytes:
    return "\n".join(json.dumps(action) for action in actions).encode() + b"\n"


def add(path: str, **extra: object) -> dict:
    return {"add": {"path": path, "size": 1, "partitionValues": {}, "modificationTime": 0, "dataChange": True,
                    **extra}}


def streaming(query: str, batch: int) -> list[dict]:
    """What Spark's Delta sink writes besides the files: its txn and its commit info."""
    return [{"txn": {"appId": query, "version": batch}},
            {"commitInfo": {"operation": "STREAMING UPDATE",
                            "operationParameters": {"outputMode": "Append", "queryId": query, "epochId": str(batch)}}}]


def parquet(keys: list, values: list, **columns: list) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table({"key": keys, "value": values, **columns}), out)
    return out.getvalue()


def log_path(version: int) -> str:
    return f"{TABLE}/_delta_log/{version:020d}.json"


def test_a_commit_names_its_batch_by_its_txn_else_by_spark_s_epoch() -> None:
    foreach = parse_commit(3, entry({"txn": {"appId": "sink-1", "version": 7}},
                                    {"commitInfo": {"operation": "WRITE", "operationParameters": {"mode": "Append"}}},
                                    add("a.parquet"), {"remove": {"path": "b.parquet"}}))
    assert (foreach.batch, foreach.said_by, foreach.app_id, foreach.operation) == (7, "txn", "sink-1", "WRITE")
    assert (foreach.added, foreach.removed, foreach.added_values) == (("a.parquet",), ("b.parquet",), ((),))
    epoch_only = parse_commit(4, entry({"commitInfo": {"operation": "STREAMING UPDATE",
                                                       "operationParameters": {"queryId": "q", "epochId": "5"}}}))
    assert (epoch_only.batch, epoch_only.said_by, epoch_only.query_id) == (5, "commitInfo", "q")
    blind = parse_commit(5, entry({"commitInfo": {"operation": "WRITE"}}, add("c.parquet")))
    assert (blind.batch, blind.said_by) == (None, None)
    vector = {"storageType": "u", "pathOrInlineDv": "x", "offset": 1, "sizeInBytes": 3, "cardinality": 1}
    assert json.loads(parse_commit(6, entry(add("d.parquet", deletionVector=vector))).added_vectors[0]) == vector


def test_versions_and_the_newest_complete_checkpoint_from_a_listing() -> None:
    names = [f"{v:020d}.json" for v in (2, 0, 1)] + ["00000000000000000001.crc", "_last_checkpoint",
                                                     f"{10:020d}.checkpoint.parquet",
                                                     f"{20:020d}.checkpoint.0000000001.0000000002.parquet",
                                                     "0000000000000000000٣.json"]  # digits to \d, not the log's
    assert versions(names) == [0, 1, 2]
    assert latest_checkpoint(names) == (10, [f"{10:020d}.checkpoint.parquet"])  # 20 has one part of two
    names.append(f"{20:020d}.checkpoint.0000000002.0000000002.parquet")
    assert latest_checkpoint(names)[0] == 20
    assert latest_checkpoint(["00000000000000000000.json"]) is None


def test_the_snapshot_is_what_the_log_adds_and_does_not_remove() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry({"metaData": {"id": "t"}}, add("part-0.parquet"), *streaming("q", 0)))
    files.write(log_path(1), entry(add("part-1.parquet"), *streaming("q", 1)))
    files.write(log_path(2), entry({"remove": {"path": "part-0.parquet"}}, add("part-2.parquet")))
    files.write(f"{TABLE}/part-9.parquet", b"left behind by a failed task: not in the table")
    snapshot = DeltaLog(files, TABLE).snapshot()
    assert snapshot is not None and snapshot.version == 2
    assert snapshot.files == [(1, "part-1.parquet"), (2, "part-2.parquet")]


def test_a_checkpoint_s_files_then_the_versions_after_it() -> None:
    files = StandInFiles()
    rows = pa.table({"add": [{"path": "old.parquet"}, None, {"path": "kept.parquet"}]})
    out = io.BytesIO()
    pq.write_table(rows, out)
    files.write(f"{TABLE}/_delta_log/{4:020d}.checkpoint.parquet", out.getvalue())
    for version in range(5):  # entries up to the checkpoint stay for the history; the snapshot skips them
        files.write(log_path(version), entry(add(f"v{version}.parquet")))
    files.write(log_path(5), entry({"remove": {"path": "old.parquet"}}, add("new.parquet")))
    snapshot = DeltaLog(files, TABLE).snapshot()
    assert snapshot is not None and snapshot.version == 5
    assert snapshot.files == [(4, "kept.parquet"), (5, "new.parquet")]
    assert [c.version for c in DeltaLog(files, TABLE).history()] == [0, 1, 2, 3, 4, 5]


def protocol(*features: str) -> dict:
    return {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": list(features),
                         "writerFeatures": list(features)}}


def column_mapping(mode: str) -> dict:
    return {"metaData": {"id": "t", "format": {"provider": "parquet"}, "schemaString": "{}", "partitionColumns": [],
                         "configuration": {"delta.columnMapping.mode": mode}}}


@pytest.mark.parametrize("actions, named", [
    ((protocol("columnMapping"), column_mapping("name")), "columnMapping"),
    ((column_mapping("id"),), "columnMapping"),
    ((protocol("v2Checkpoint", "deletionVectors"),), "v2Checkpoint"),
])
def test_a_table_feature_the_reader_does_not_read_is_refused_by_its_name(actions: tuple, named: str) -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(*actions, add("a.parquet")))
    with pytest.raises(BadInput, match=f"uses {named}, which the harness's reader does not read"):
        DeltaLog(files, TABLE).snapshot()


def test_deletion_vectors_and_a_mapping_mode_of_none_are_read() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(protocol("deletionVectors", "timestampNtz"), column_mapping("none"),
                                   add("a.parquet")))
    snapshot = DeltaLog(files, TABLE).snapshot()
    assert snapshot is not None and snapshot.files == [(0, "a.parquet")]


def test_a_feature_a_checkpoint_turns_on_is_refused_by_its_name() -> None:
    files = StandInFiles()
    rows = pa.table({"add": [None, {"path": "a.parquet"}],
                     "metaData": [{"configuration": [("delta.columnMapping.mode", "name")]}, None]},
                    schema=pa.schema([("add", pa.struct([("path", pa.string())])),
                                      ("metaData", pa.struct([("configuration", pa.map_(pa.string(), pa.string()))]))]))
    out = io.BytesIO()
    pq.write_table(rows, out)
    files.write(f"{TABLE}/_delta_log/{0:020d}.checkpoint.parquet", out.getvalue())
    with pytest.raises(BadInput, match="uses columnMapping"):
        DeltaLog(files, TABLE).snapshot()


def test_a_gap_in_the_log_is_named() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet")))
    files.write(log_path(2), entry(add("b.parquet")))
    with pytest.raises(BadInput, match="version 1 is missing"):
        DeltaLog(files, TABLE).snapshot()


def test_data_file_paths_relative_encoded_or_file_uris() -> None:
    log = DeltaLog(StandInFiles(), TABLE)
    assert log.data_path("part-0%20x.parquet") == f"{TABLE}/part-0 x.parquet"
    assert log.data_path("file:/checkpoints/s-table/p.parquet") == "/checkpoints/s-table/p.parquet"
    with pytest.raises(BadInput, match="not on the run's volume"):
        log.data_path("s3://bucket/p.parquet")


def test_rows_of_the_snapshot_become_records_a_file_a_partition() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet"), *streaming("q", 0)))
    files.write(log_path(1), entry(add("b.parquet"), *streaming("q", 1)))
    files.write(f"{TABLE}/a.parquet", parquet(["k1", "k2"], ['{"id":"1"}', '{"id":"2"}']))
    files.write(f"{TABLE}/b.parquet", parquet([b"k3"], [b'{"id":"3"}']))
    batches: list[list] = []
    read = DeltaTable(files, TABLE).read(batches.append)
    assert [(r.partition(), r.offset(), r.key(), r.value()) for r in read.records] == [
        (0, 0, b"k1", b'{"id":"1"}'), (0, 1, b"k2", b'{"id":"2"}'), (1, 0, b"k3", b'{"id":"3"}')]
    assert read.stable == read.high == {0: 2, 1: 1} and not read.stuck
    assert sum(map(len, batches)) == 3


def test_rows_are_decoded_and_handed_on_a_batch_at_a_time(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A big file is never whole in Python objects: pyarrow decodes it `BATCH` rows at a time, each handed
    to the checker as columns, offsets running on across them."""
    monkeypatch.setattr(rows, "BATCH", 3)
    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet"), add("b.parquet"), *streaming("q", 0)))
    out = io.BytesIO()
    pq.write_table(pa.table({"key": [f"k{i}" for i in range(7)], "value": [f"v{i}" for i in range(7)]}), out,
                   row_group_size=3)
    files.write(f"{TABLE}/a.parquet", out.getvalue())
    files.write(f"{TABLE}/b.parquet", parquet(["k7"], [None]))
    events: list[object] = []
    iter_batches = pq.ParquetFile.iter_batches

    def decoding(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        for batch in iter_batches(self, *args, **kwargs):
            events.append(f"decoded {batch.num_rows}")
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", decoding)
    read = DeltaTable(files, TABLE).read(lambda batch: events.append(
        (type(batch).__name__, [(r.partition(), r.offset(), r.key(), r.value()) for r in batch])))
    assert [e for e in events if isinstance(e, str)] == ["decoded 3", "decoded 3", "decoded 1", "decoded 1"]
    assert [e for e in events if not isinstance(e, str)] == [  # handed on in order, on the checker's thread
        ("Records", [(0, 0, b"k0", b"v0"), (0, 1, b"k1", b"v1"), (0, 2, b"k2", b"v2")]),
        ("Records", [(0, 3, b"k3", b"v3"), (0, 4, b"k4", b"v4"), (0, 5, b"k5", b"v5")]),
        ("Records", [(0, 6, b"k6", b"v6")]),
        ("Records", [(1, 0, b"k7", b"")])]  # a null value: read as empty, `unreadable`
    assert read.high == {0: 7, 1: 1} and read.records.values[-1] == b""


def test_a_table_partitioned_by_key_gives_each_row_its_file_s_key() -> None:
    """A partition column is in the log's `partitionValues`, not in the files, whether a version or a
    checkpoint added the file."""
    files = StandInFiles()
    add_type = pa.struct([("path", pa.string()), ("partitionValues", pa.map_(pa.string(), pa.string()))])
    rows = pa.table({"add": pa.array([{"path": "key=k1/a.parquet", "partitionValues": [("key", "k1")]}], add_type)})
    out = io.BytesIO()
    pq.write_table(rows, out)
    files.write(f"{TABLE}/_delta_log/{0:020d}.checkpoint.parquet", out.getvalue())
    files.write(log_path(0), entry(add("key=k1/a.parquet", partitionValues={"key": "k1"})))
    files.write(log_path(1), entry(add("key=k2/b.parquet", partitionValues={"key": "k2"}),
                                   add("key=__HIVE_DEFAULT_PARTITION__/c.parquet", partitionValues={"key": None})))
    for name, value in (("key=k1/a.parquet", "v1"), ("key=k2/b.parquet", "v2"),
                        ("key=__HIVE_DEFAULT_PARTITION__/c.parquet", "v3")):
        data = io.BytesIO()
        pq.write_table(pa.table({"value": [value, value + "'"]}), data)
        files.write(f"{TABLE}/{name}", data.getvalue())
    read = DeltaTable(files, TABLE).read(lambda batch: None)
    assert [(r.partition(), r.key(), r.value()) for r in read.records] == [
        (0, b"k1", b"v1"), (0, b"k1", b"v1'"), (1, b"k2", b"v2"), (1, b"k2", b"v2'"), (2, None, b"v3"),
        (2, None, b"v3'")]
    assert DeltaTable(files, TABLE).state_at(1) == {b"k1": [b"v1", b"v1'"], b"k2": [b"v2", b"v2'"],
                                                    None: [b"v3", b"v3'"]}


def test_no_table_at_the_path_names_where_the_harness_looked() -> None:
    table = DeltaTable(StandInFiles(), table_path("/checkpoints/s"))
    with pytest.raises(BadInput, match="no Delta table at /checkpoints/s-table .*_delta_log"):
        table.read(lambda batch: None)


def test_a_table_without_key_and_value_names_the_columns_it_needs() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet")))
    out = io.BytesIO()
    pq.write_table(pa.table({"id": [1], "value": ["x"]}), out)
    files.write(f"{TABLE}/a.parquet", out.getvalue())
    with pytest.raises(BadInput, match="no column key .*it has id, value"):
        DeltaTable(files, TABLE).read(lambda batch: None)


def test_a_table_already_there_is_refused_before_the_run() -> None:
    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet")))
    with pytest.raises(BadInput, match="already exists"):
        DeltaTable(files, TABLE).prepare()
    DeltaTable(StandInFiles(), TABLE).prepare()


def test_a_sink_says_the_output_it_writes_and_is_refused_against_another(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from harness.run.session import scenario
    from harness.subject.code_spec import resolve_sink

    assert resolve_sink("delta_streaming").output == "delta" and resolve_sink("builtin_kafka").output is None
    assert {resolve_sink(name).output for name in ("delta_foreach_batch_txn", "bad_delta_blind_append",
                                                   "bad_delta_app_id_per_restart")} == {"delta"}
    from types import SimpleNamespace

    from harness.versions import stack

    cluster = SimpleNamespace(images=SimpleNamespace(stack=stack()))  # asked nothing: bad input comes first
    with pytest.raises(BadInput, match="writes the delta output .*--output delta"):
        scenario(cluster, "x", sink="delta_streaming", output="kafka")  # type: ignore[arg-type]


def test_cells_become_bytes_in_arrow_whatever_text_or_binary_type() -> None:
    """String and binary columns (large or not) are cast in C; another type takes the general way."""
    for kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        column = pa.array(["a", None, "é"] if "string" in str(kind) else [b"a", None, "é".encode()], kind)
        assert rows.cells_as_bytes(column) == [b"a", None, "é".encode()]
    assert rows.cells_as_bytes(pa.array([1, None])) == [1, None]  # not text: `unreadable` downstream


# A deletion vector as Spark 4.0 with Delta 4.0.1 wrote it: DELETE of rows 5 to 12 and 17 of a 20-row file (a
# run container), in its file beside the table, the log's descriptor naming it by UUID
SPARK_VECTOR = bytes.fromhex("0100000023d1d339640100000000000000000000003b300000010000080002000500070011000000667bba49")
SPARK_DESCRIPTOR = {"storageType": "u", "pathOrInlineDv": "&T5?z[.cplR0dH:+<xa&", "offset": 1, "sizeInBytes": 35,
                    "cardinality": 9}
KEPT = [0, 1, 2, 3, 4, 13, 14, 15, 16, 18, 19]  # what Spark reads of the table


def z85_encode(data: bytes) -> str:
    data += bytes(-len(data) % 4)
    out = ""
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start:start + 4], "big")
        out += "".join(deletion_vectors.Z85[value // 85 ** power % 85] for power in range(4, -1, -1))
    return out


def table_with_a_deleting_version(files: StandInFiles, descriptor: dict) -> None:
    """Version 0 writes rows 0..19 in one file; version 1 removes it and adds it again with a vector."""
    files.write(log_path(0), entry(add("a.parquet")))
    files.write(log_path(1), entry({"remove": {"path": "a.parquet"}}, add("a.parquet", deletionVector=descriptor),
                                   {"commitInfo": {"operation": "DELETE"}}))
    files.write(f"{TABLE}/a.parquet", parquet([f"k{i}" for i in range(20)], [str(i) for i in range(20)]))


def test_rows_a_deletion_vector_names_are_not_in_the_table() -> None:
    files = StandInFiles()
    table_with_a_deleting_version(files, SPARK_DESCRIPTOR)
    files.write(f"{TABLE}/deletion_vector_e2095b86-f1da-41b1-a4e8-f611cced6979.bin", SPARK_VECTOR)
    snapshot = DeltaLog(files, TABLE).snapshot()
    assert snapshot is not None and snapshot.files == [(0, "a.parquet")]  # its rows were written by version 0
    read = DeltaTable(files, TABLE).read(lambda batch: None)
    assert [int(v) for v in read.records.values] == KEPT
    assert list(read.records.offsets) == list(range(len(KEPT))) and read.high == {0: len(KEPT)}


def test_an_inline_vector_and_a_dense_one_read_alike() -> None:
    """`i`: the vector in the log, Z85; a container of more than 4096 positions is a bitmap."""
    files = StandInFiles()
    inline = SPARK_VECTOR[5:40]
    table_with_a_deleting_version(files, {"storageType": "i", "pathOrInlineDv": z85_encode(inline),
                                          "sizeInBytes": len(inline), "cardinality": 9})
    assert [int(v) for v in DeltaTable(files, TABLE).read(lambda batch: None).records.values] == KEPT
    dense = set(range(0, 10_000, 2)) | {70_000}  # 5,000 positions under 2^16: a bitmap; one above: an array
    words = [sum(1 << bit for bit in range(64) if word * 64 + bit in dense) for word in range(1024)]
    bitmap = (struct.pack("<IIHHHHII", 12346, 2, 0, 4999, 1, 0, 0, 0) + struct.pack("<1024Q", *words)
              + struct.pack("<H", 70_000 - 65_536))
    serialized = struct.pack("<iqI", deletion_vectors.MAGIC, 1, 0) + bitmap
    assert deletion_vectors.positions(serialized) == dense


def test_a_damaged_vector_is_named() -> None:
    files = StandInFiles()
    table_with_a_deleting_version(files, SPARK_DESCRIPTOR)
    files.write(f"{TABLE}/deletion_vector_e2095b86-f1da-41b1-a4e8-f611cced6979.bin", SPARK_VECTOR[:-1] + b"\0")
    with pytest.raises(BadInput, match="deletion vector at .*deletion_vector_e2095b86.*damaged"):
        DeltaTable(files, TABLE).read(lambda batch: None)


def test_a_table_whose_snapshot_names_a_missing_file_is_corrupt_and_fails() -> None:
    """A lost file is the sink's failure (table_corrupt, the file named), never the harness's own error."""
    from harness.checker.verdict import EXACTLY_ONCE, FAIL, Verdict
    from harness.output.commits import TableCorrupt
    from harness.run.output_verdict import with_corrupt_table

    files = StandInFiles()
    files.write(log_path(0), entry(add("gone.parquet"), *streaming("q", 0)))
    with pytest.raises(TableCorrupt) as raised:
        DeltaTable(files, TABLE).read(lambda batch: None)
    assert raised.value.missing == f"{TABLE}/gone.parquet"
    event = {"where": TABLE, "missing": raised.value.missing, "after": "drop:sender@s3.put#2"}
    verdict = with_corrupt_table(Verdict(FAIL, EXACTLY_ONCE, {}, 10, 0, 0), event)
    assert verdict.outcome == FAIL and verdict.anomalies["table_corrupt"].examples == [event]


@pytest.mark.parametrize("garbage", [b'{"add":{}}\n', b"[" * 100_000, b"\x1f\x8b\x08\x00garbage"],
                         ids=["add-without-path", "deep-json", "gzip-bytes"])
def test_a_log_entry_that_cannot_be_parsed_is_the_table_s_corruption_not_a_crash(garbage: bytes) -> None:
    from harness.output.commits import TableCorrupt, parsed

    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet"), *streaming("q", 0)))
    files.write(log_path(1), garbage)
    with pytest.raises(TableCorrupt, match="cannot be read") as raised, parsed(TABLE):
        DeltaTable(files, TABLE).commits()
    assert raised.value.error and raised.value.where == TABLE


def test_a_file_whose_dictionary_decodes_past_the_limit_is_refused_undecoded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A kilobyte of Parquet whose dictionary holds one large value, repeated by its indices, decoded to
    1.25 GiB: its size is counted from the dictionary and the indices before any cell is made."""
    monkeypatch.setattr(rows, "MAX_DECODED", 10 * 2**20)
    out = io.BytesIO()
    big = "x" * 2**16
    pq.write_table(pa.table({"key": ["k"] * 1000, "value": [big] * 1000}), out, use_dictionary=True,
                   compression="zstd")
    assert len(out.getvalue()) < 20_000  # small on the volume, 64 MiB decoded
    with pytest.raises(ValueError, match="decode to more than"):
        list(rows.file_rows(out.getvalue(), 0, 0, "t"))
    monkeypatch.setattr(rows, "MAX_DECODED", 2**30)
    assert sum(len(r) for r in rows.file_rows(out.getvalue(), 0, 0, "t")) == 1000


KEPT_POOLS: list[pa.MemoryPool] = []


def test_a_committed_decompression_bomb_is_the_table_s_corruption_naming_the_file() -> None:
    """The hostile sink's own bomb (fixtures/user_sinks/hostile_delta_bomb.py: 443 bytes, 1.25 GiB decoded),
    committed beside a good file: refused undecoded, and the table's failure names it. Its first batch (655
    MiB decoded) is within the bound; its second would pass it, and is refused on its indices alone:
    pyarrow never holds more than the first batch's cells."""
    from fixtures.user_sinks.hostile_delta_bomb import BOMB, PARQUET
    from harness.output.commits import TableCorrupt, parsed

    files = StandInFiles()
    files.write(log_path(0), entry(add("a.parquet"), *streaming("q", 0)))
    files.write(f"{TABLE}/a.parquet", parquet(["k"], ["v"]))
    files.write(log_path(1), entry(add(BOMB)))
    files.write(f"{TABLE}/{BOMB}", PARQUET)
    default = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(default)  # its own peak, whatever ran before in this process
    # kept for the process: a buffer it allocated and a traceback still holds is freed in a later garbage
    # collection, through the pool (freed with the test, that segfaulted Python 3.11's collector)
    KEPT_POOLS.append(pool)
    pa.set_memory_pool(pool)
    try:
        with pytest.raises(TableCorrupt, match="decode to more than") as raised, parsed(TABLE):
            DeltaTable(files, TABLE).read(lambda batch: None)
    finally:
        pa.set_memory_pool(default)
    assert raised.value.missing == f"{TABLE}/{BOMB}" and raised.value.where == TABLE
    assert 0 < pool.max_memory() < rows.MAX_DECODED * 3 // 4
