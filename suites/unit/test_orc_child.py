"""ORC data files decoded in a child of capped memory (harness.output.orc_child): read as pyarrow reads them,
and refused past the bound, or when they are not ORC, in one line."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from harness.output.orc_child import orc_batches
from harness.output.rows import MAX_DECODED

pytestmark = pytest.mark.unit


def written(table: pa.Table, **options: object) -> bytes:
    out = io.BytesIO()
    orc.write_table(table, out, **options)
    return out.getvalue()


def test_the_chosen_columns_come_back_as_written_in_batches() -> None:
    rows = 25_000
    table = pa.table({"key": [b"k%d" % (i % 7) for i in range(rows)], "value": [b"v%d" % i for i in range(rows)],
                      "other": list(range(rows))})
    names, batches = orc_batches(written(table), ["key", "value", "absent"], MAX_DECODED)
    read = pa.Table.from_batches(list(batches))
    assert names == ["key", "value", "other"] and read.column_names == ["key", "value"]
    assert read.column("value").to_pylist() == table.column("value").to_pylist()


def test_a_file_that_decodes_past_the_bound_is_refused() -> None:
    """A dictionary of one value repeated: small on disk, large decoded (here past a bound of 1 MiB)."""
    table = pa.table({"key": [b"x" * 1000] * 5000, "value": [b"v"] * 5000})
    data = written(table, compression="zlib", dictionary_key_size_threshold=1.0)
    assert len(data) < 50_000
    names, batches = orc_batches(data, ["key", "value"], 2**20)
    with pytest.raises(ValueError, match="decode to more than 1,048,576 bytes: refused"):
        list(batches)


def test_bytes_that_are_not_orc_are_refused_in_one_line() -> None:
    with pytest.raises(ValueError) as refused:
        orc_batches(b"PAR1 not an orc file at all", ["key"], MAX_DECODED)
    assert "\n" not in str(refused.value) and str(refused.value)
