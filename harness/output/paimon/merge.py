"""A Paimon primary-key table's LSM merge, as its readers apply it: every file of a snapshot holds writes of
keys (each row its `_KEY_<field>` columns, a `_SEQUENCE_NUMBER` and a `_VALUE_KIND`), and the table holds, for
each key, the write its merge engine keeps: the highest sequence number (`deduplicate`, the default) or the
lowest (`first-row`), gone when that write is a retraction (`-U`, `-D`). The merge is said here as the rows
each file loses, so a file's remaining rows are read as an append table's are (harness.output.rows).
Engines that compute a row from several writes (`partial-update`, `aggregation`) and a user `sequence.field`
are refused by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from harness.errors import BadInput
from harness.output.rows import file_columns

MergeEngine = Literal["deduplicate", "first-row"]
SEQUENCE, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
RETRACTIONS = frozenset({1, 3})  # RowKind UPDATE_BEFORE (-U) and DELETE (-D): the key is not in the table
DataFile = tuple[str, Callable[[], tuple[bytes, bool]]]  # a file's name, and how to get its bytes (and if ORC)


def merge_engine(options: Mapping[str, str], table: str) -> MergeEngine:
    """The table's merge engine, from its schema's options; BadInput for one the harness does not apply."""
    engine = options.get("merge-engine", "deduplicate")
    if engine not in ("deduplicate", "first-row"):
        raise BadInput(f"{table} merges a key's writes with merge-engine '{engine}', which the harness does not "
                       "apply (it reads deduplicate and first-row primary-key tables)")
    if options.get("sequence.field"):
        raise BadInput(f"{table} orders a key's writes by sequence.field '{options['sequence.field']}', which the "
                       "harness does not apply (it orders them by Paimon's own sequence numbers)")
    return engine  # type: ignore[return-value]


def superseded(files: list[DataFile], keys: list[str], engine: MergeEngine, table: str) -> dict[str, frozenset[int]]:
    """Each file's rows (by position) the merge leaves out of the table: every write of a key but the one the
    engine keeps, and that one too where it retracts the key."""
    columns = [KEY_PREFIX + key for key in keys]
    kept: dict[tuple, tuple[int, int, int, int]] = {}  # key -> (sequence, file, row, kind) of the write kept
    sizes: list[int] = []
    first = engine == "first-row"
    for index, (name, data) in enumerate(files):
        content, orc = data()
        found = file_columns(content, orc, [*columns, SEQUENCE, KIND])
        missing = [c for c in (*columns, SEQUENCE, KIND) if c not in found]
        if missing:
            raise BadInput(f"{table}: data file {name} of a primary-key table has no {', '.join(missing)} column")
        sequences, kinds = found[SEQUENCE], found[KIND]
        sizes.append(len(sequences))
        for row, (key, sequence, kind) in enumerate(zip(zip(*(found[c] for c in columns), strict=True), sequences,
                                                        kinds, strict=True)):
            now = kept.get(key)
            if now is None or (sequence < now[0] if first else sequence >= now[0]):
                kept[key] = (sequence, index, row, kind)
    survivors: list[set[int]] = [set() for _ in files]
    for _, index, row, kind in kept.values():
        if kind not in RETRACTIONS:
            survivors[index].add(row)
    return {name: frozenset(set(range(size)) - survivors[index])
            for index, ((name, _), size) in enumerate(zip(files, sizes, strict=True))
            if len(survivors[index]) < size}
