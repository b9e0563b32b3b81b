"""A table's data file as the checkers' records: its `key` and `value` columns, decoded by pyarrow in
batches (a file of a 1M-record batch is never whole in Python objects, and no object is made for each
row). Every table format here keeps its rows in Parquet (or ORC) files its own metadata names; this is
the one place that reads them."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from harness.client.reader import ReadResult, collector_paused, feeding
from harness.client.records import Record, Records, as_bytes
from harness.errors import BadInput
from harness.output.orc_child import orc_batches
from harness.output.parquet_pages import Chunk, chunk_pages

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

COLUMNS = ("key", "value")  # what the checkers read of a row, as a Kafka record's key and value
BATCH = 10_000  # rows decoded and handed to the checker at once
# The bytes the chosen columns of one data file may decode to: far above any file a run writes (a batch of a
# million 100-byte records is about 0.1 GiB), far below what a crafted one could (a kilobyte of Parquet whose
# dictionary holds one large value, repeated by its indices, decoded to 1.25 GiB).
MAX_DECODED = 2**30


def cells_as_bytes(column: pa.Array) -> list[bytes | None]:
    """A column's cells as bytes (None stays None): a string or binary column cast in C (no str made for
    each cell), anything else through Python."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind):
        return column.cast(pa.binary()).to_pylist()
    return as_bytes(column.to_pylist())


def _batches(data: bytes, orc: bool, columns: list[str]) -> tuple[list[str], Iterator[pa.RecordBatch]]:
    """The file's column names, and its chosen columns `BATCH` rows at a time."""
    if orc:  # nothing in an ORC file bounds its decoding beforehand: decoded where memory is capped
        return orc_batches(data, columns, MAX_DECODED)
    import pyarrow.parquet as pq

    file = pq.ParquetFile(io.BytesIO(data))
    names = file.schema_arrow.names
    kept = [c for c in columns if c in names]
    chunks = _chunks(data, file.metadata, kept)
    pages = sum(chunk.uncompressed for column in chunks.values() for chunk in column)
    if pages > MAX_DECODED:
        raise ValueError(f"its pages decompress to more than {MAX_DECODED:,} bytes: refused undecompressed")
    # a column whose pages could make one value many (a dictionary's, a prefix's) is read as a dictionary, so
    # that a batch's size is known before its cells are made; the others decode to at most their pages' bytes
    # (and pyarrow would hash every value of a plain column to make it a dictionary)
    dictionary = [c for c in kept if not all(chunk.not_expanding for chunk in chunks[c])]
    parquet = pq.ParquetFile(io.BytesIO(data), read_dictionary=dictionary, metadata=file.metadata)
    return names, _bounded(parquet.iter_batches(batch_size=BATCH, columns=kept))


def _chunks(data: bytes, metadata: pq.FileMetaData, columns: list[str]) -> dict[str, list[Chunk]]:
    """The chosen columns' chunks in every row group, as their pages' headers say."""
    chunks: dict[str, list[Chunk]] = {c: [] for c in columns}
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            top = column.path_in_schema.split(".")[0]
            if top in chunks:
                chunks[top].append(chunk_pages(data, column))
    return chunks


def _bounded(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches with their dictionary columns decoded, each only once the file's cells so far, counted
    from the dictionary's lengths and the indices, stay within MAX_DECODED (ValueError past it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    decoded = 0
    for batch in batches:
        columns = []
        for column in batch.columns:
            if pa.types.is_dictionary(column.type):
                dictionary = column.dictionary
                if pa.types.is_binary(dictionary.type) or pa.types.is_string(dictionary.type) \
                        or pa.types.is_large_binary(dictionary.type) or pa.types.is_large_string(dictionary.type):
                    lengths = pc.binary_length(dictionary)
                else:
                    lengths = pa.array([dictionary.nbytes // max(len(dictionary), 1) + 1] * len(dictionary))
                decoded += (pc.sum(pc.take(lengths, column.indices)).as_py() or 0) if len(dictionary) else 0
                _within(decoded)  # before its cells are made
                column = column.dictionary_decode()
            else:
                decoded += column.nbytes
                _within(decoded)
            columns.append(column)
        yield pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _within(decoded: int) -> None:
    if decoded > MAX_DECODED:
        raise ValueError(f"its columns decode to more than {MAX_DECODED:,} bytes: refused undecoded")


def file_columns(data: bytes, orc: bool, columns: list[str]) -> dict[str, list]:
    """The chosen columns of a file, whole, as Python values (a column the file lacks is not in the result):
    for the few narrow columns a merge reads (keys, sequence numbers)."""
    names, batches = _batches(data, orc, columns)
    found: dict[str, list] = {c: [] for c in columns if c in names}
    for arrow in batches:
        for column in found:
            found[column] += arrow.column(column).to_pylist()
    return found


def file_rows(data: bytes, partition: int, timestamp_ms: int, table: str,
              partition_values: Mapping[str, str | None] | None = None,
              deleted: set[int] | frozenset[int] = frozenset(), orc: bool = False) -> Iterator[Records]:
    """One data file's rows as records of `partition` (a row's index among the rows kept is its offset),
    placed at `timestamp_ms`. A column the table is partitioned by may be in the metadata only
    (`partition_values`): each row of the file has the file's value. Rows at the positions in `deleted`
    (a deletion vector's, a position delete's) are not in the table: left out. `table` names the table
    in errors."""
    partition_values = partition_values or {}
    names, batches = _batches(data, orc, list(COLUMNS))
    constant = {c: None if partition_values[c] is None else partition_values[c].encode()  # type: ignore[union-attr]
                for c in COLUMNS if c not in names and c in partition_values}
    missing = [c for c in COLUMNS if c not in names and c not in constant]
    if missing:
        raise BadInput(f"{table} has no column {', '.join(missing)} (it has {', '.join([*names, *partition_values])}): "
                       "the checkers read a `key` and a `value` column, each string or binary")
    offset = row = 0
    for arrow in batches:
        keys, values = (cells_as_bytes(arrow.column(c)) if c not in constant else [constant[c]] * arrow.num_rows
                        for c in COLUMNS)
        if deleted:
            kept = [i for i in range(len(values)) if row + i not in deleted]
            keys, values = [keys[i] for i in kept], [values[i] for i in kept]
        row += arrow.num_rows
        if not values:
            continue
        if None in values:
            values = [value or b"" for value in values]  # a null value: `unreadable`
        yield Records.run(partition, offset, keys, values, timestamp_ms)  # type: ignore[arg-type]
        offset += len(values)


def read_files(count: int, rows_of: Callable[[int], Iterable[Records]],
               on_batch: Callable[[list[Record]], None]) -> ReadResult:
    """A table's `count` data files as one read: file i is partition i (`rows_of(i)`, its rows in batches),
    each file's rows all committed (its 'stable offset' its row count). The checker works on a thread of its
    own while the next file is fetched and decoded."""
    records = Records()
    with collector_paused(), feeding(on_batch) as feed:
        for partition in range(count):
            for batch in rows_of(partition):
                records.extend(batch)
                feed(batch)  # type: ignore[arg-type]  # Records: the checkers take its columns as they are
    ends = dict.fromkeys(range(count), 0)
    for partition in records.partitions:
        ends[partition] += 1
    return ReadResult(records, ends, dict(ends))
