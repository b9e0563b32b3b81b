"""A Hudi merge-on-read table's file slices, merged by hudi-rs (the `hudi` package, Hudi's own Rust reader):
each slice's base file with its log files, the newer writes of a record key over the older, deletes and
rolled-back blocks applied, as Spark's snapshot query reads it. hudi-rs reads a folder, so the table is read
from a local copy (harness.output.hudi.table); the timeline's evidence is still the harness's own parse."""

from __future__ import annotations

from harness.errors import BadInput
from harness.output.rows import COLUMNS, cells_as_bytes

Slice = tuple[int, list[bytes | None], list[bytes]]  # the instant that made it, its rows' keys and values


def merged_slices(folder: str, upto: int | None, table: str) -> list[Slice]:
    """Each file slice of the table at `folder` as of instant `upto` (the latest without), merged, in the
    order of the instants that made them; its rows' `key` and `value` (a null value read as empty: unreadable)."""
    try:
        import hudi
    except ImportError:
        raise BadInput(f"{table} is merge-on-read: reading it needs hudi-rs (pip install 'eo-harness[hudi]')") \
            from None
    reader_table = hudi.HudiTable(folder)
    options = hudi.HudiReadOptions(projection=list(COLUMNS))
    if upto is not None:
        options = options.with_as_of_timestamp(str(upto))
    reader = reader_table.create_file_group_reader_with_options(options)
    found = []
    for file_slice in reader_table.get_file_slices(options):
        batch = reader.read_file_slice(file_slice, options)
        names = batch.schema.names
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            raise BadInput(f"{table} has no column {', '.join(missing)} (it has {', '.join(names)}): the checkers "
                           "read a `key` and a `value` column, each string or binary")
        keys, values = cells_as_bytes(batch.column("key")), cells_as_bytes(batch.column("value"))
        found.append((int(file_slice.creation_instant_time), keys, [value or b"" for value in values]))
    return sorted(found, key=lambda found_slice: found_slice[0])
