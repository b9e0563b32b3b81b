"""The harness's Delta reader against Delta's own (delta-rs, the `deltalake` package): tables written and
checkpointed by delta-rs, partitioned or not, rewritten in part; the harness's snapshot must hold the same
rows as deltalake's. The tables Spark writes are compared the same way in the chaos suite
(suites/test_tables.py: deletion vectors, partitions)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RustTable
from deltalake import write_deltalake

from harness.output.delta.table import DeltaTable
from suites.unit.test_iceberg_output import LocalFiles

pytestmark = pytest.mark.unit


def rows(start: int, count: int) -> pa.Table:
    return pa.table({"key": [f"k{i % 7}" for i in range(start, start + count)],
                     "value": [f'{{"i": {i}}}' for i in range(start, start + count)]})


def deltalake_rows(path: Path) -> Counter:
    table = RustTable(str(path)).to_pyarrow_table(columns=["key", "value"])
    return Counter(zip(table.column("key").cast(pa.binary()).to_pylist(),
                       table.column("value").cast(pa.binary()).to_pylist(), strict=True))


def harness_rows(path: Path) -> Counter:
    read = DeltaTable(LocalFiles(), str(path)).read(lambda batch: None)  # type: ignore[arg-type]
    return Counter((r.key(), r.value()) for r in read.records)


@pytest.mark.parametrize("partition_by", [None, ["key"]])
def test_the_harness_reads_the_rows_delta_rs_reads_across_checkpoints_and_deletes(tmp_path: Path,
                                                                                 partition_by: list | None) -> None:
    path = tmp_path / "table"
    for batch in range(4):
        write_deltalake(str(path), rows(batch * 50, 50), mode="append", partition_by=partition_by)
        if batch == 1:
            RustTable(str(path)).create_checkpoint()
    RustTable(str(path)).delete("key = 'k3'")  # rewrites the files that held k3
    write_deltalake(str(path), rows(200, 20), mode="append", partition_by=partition_by)

    expected = deltalake_rows(path)
    assert sum(expected.values()) == 220 - sum(1 for i in range(200) if i % 7 == 3)
    assert harness_rows(path) == expected
