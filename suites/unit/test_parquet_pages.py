"""A table's Parquet files are bounded by what their page headers say before a page is decompressed, and
only a column whose pages can make one value many is read as a dictionary (pyarrow hashes every value of
a plain column it is asked to read as one)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.output import rows
from harness.output.parquet_pages import DATA_PAGES, DICTIONARY_PAGE, chunk_pages

pytestmark = pytest.mark.unit


def parquet(values: list[str], **options: object) -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table({"key": ["k"] * len(values), "value": values}), out, **options)  # type: ignore[arg-type]
    return out.getvalue()


def value_chunk(data: bytes, group: int = 0):  # type: ignore[no-untyped-def]
    return chunk_pages(data, pq.ParquetFile(io.BytesIO(data)).metadata.row_group(group).column(1))


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_the_headers_give_each_page_s_kind_size_and_encoding(version: str) -> None:
    values = [f"value-{i:08d}" for i in range(50_000)]
    plain = value_chunk(parquet(values, use_dictionary=False, data_page_version=version, compression="zstd"))
    assert plain.encodings == {0} and plain.not_expanding
    assert {page.kind for page in plain.pages} == {DATA_PAGES[version == "2.0"]}
    assert plain.uncompressed >= sum(len(v) for v in values)  # each value's bytes and its length

    repeated = value_chunk(parquet(["a", "b"] * 25_000, data_page_version=version))
    assert repeated.pages[0].kind == DICTIONARY_PAGE and repeated.encodings == {8} and not repeated.not_expanding

    delta = value_chunk(parquet(values, use_dictionary=False, column_encoding={"value": "DELTA_BYTE_ARRAY",
                                                                                "key": "PLAIN"}))
    assert delta.encodings == {7} and not delta.not_expanding  # a prefix shared by many values


def test_a_dictionary_that_falls_back_to_plain_pages_is_still_read_as_a_dictionary() -> None:
    values = [f"value-{i:012d}-payload" for i in range(200_000)]  # past pyarrow's 1 MiB dictionary page
    chunk = value_chunk(parquet(values))
    assert chunk.encodings == {0, 8} and not chunk.not_expanding
    assert [bytes(r) for batch in rows.file_rows(parquet(values), 0, 0, "t") for r in batch.values][-1] \
        == values[-1].encode()


def test_pages_that_decompress_past_the_bound_are_refused_undecompressed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A plain page of 64 MiB of one repeated byte is a few kilobytes of zstd: refused from its header."""
    monkeypatch.setattr(rows, "MAX_DECODED", 10 * 2**20)
    data = parquet(["x" * 2**16] * 1000, use_dictionary=False, compression="zstd")
    assert len(data) < 100_000
    with pytest.raises(ValueError, match="pages decompress to more than"):
        list(rows.file_rows(data, 0, 0, "t"))
    monkeypatch.setattr(rows, "MAX_DECODED", 2**30)
    assert sum(len(r) for r in rows.file_rows(data, 0, 0, "t")) == 1000


@pytest.mark.parametrize("garbage", [b"\x00" * 64, b"\x15" + b"\xff" * 63, b"\x1c" * 64],
                         ids=["no-sizes", "endless-integer", "nesting"])
def test_a_page_header_that_cannot_be_read_is_a_value_error(garbage: bytes) -> None:
    data = parquet(["a"] * 10, use_dictionary=False, compression="none")
    column = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(1)
    start = column.data_page_offset
    crafted = data[:start] + garbage[:column.total_compressed_size].ljust(column.total_compressed_size, b"\x00") \
        + data[start + column.total_compressed_size:]
    with pytest.raises(ValueError):
        chunk_pages(crafted, column)


def test_every_column_of_every_row_group_is_walked() -> None:
    data = parquet([f"v{i}" for i in range(30_000)], row_group_size=10_000, use_dictionary=False)
    chunks = rows._chunks(data, pq.ParquetFile(io.BytesIO(data)).metadata, ["key", "value"])
    assert [len(chunks[c]) for c in ("key", "value")] == [3, 3]


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(min_size=1, max_size=400), at=st.integers(min_value=0, max_value=10_000))
def test_any_bytes_where_the_headers_lie_are_read_or_refused_with_a_value_error(garbage: bytes, at: int) -> None:
    """What the sink writes in place of page headers is read as headers or refused: never another error, and
    never a read past the column chunk's bytes."""
    data = parquet([f"v{i}" for i in range(100)], use_dictionary=False, compression="none")
    column = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(1)
    start = column.data_page_offset + at % column.total_compressed_size
    crafted = data[:start] + garbage + data[start + len(garbage):]
    try:
        chunk = chunk_pages(crafted[:len(data)], column)
    except ValueError:
        return
    assert all(page.uncompressed >= 0 for page in chunk.pages)
