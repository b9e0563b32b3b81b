"""A PostgreSQL table's rows and commits as the harness reads them, apart from the server: the fetched rows
made records, a transaction's rows a partition (TransactionRows), and the commit history from what each
transaction wrote (`history`) or, for a state table, from its change log (`changes_history`). The table's
read (harness.output.postgres.table) hands them the rows it fetched."""

from __future__ import annotations

from collections import Counter
from itertools import groupby
from operator import countOf, itemgetter

from harness.client.records import Records, as_bytes
from harness.output.commits import Commit, State

OPERATIONS = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}  # a change's kind, as the change log says it


def batches_in_parts(rows: list[tuple]) -> list[int]:
    """The batches that several transactions wrote, from `(xid, batch, ...)` rows: the only ones whose rows
    can repeat (a batch one transaction wrote is written once), so the only ones the history compares."""
    writers = Counter(row[1] for row in rows)
    return sorted(batch for batch, count in writers.items() if count > 1)


def history(rows: list[tuple[int, int, int, int, str | None]], repeats: list[tuple[int, list[int]]]) -> list[Commit]:
    """The table's commits, one per (transaction, batch): from `(xid, batch, rows, commit time ms, query id of
    the batch row that transaction wrote)` and, per batch, the transactions whose rows repeat each other's
    (the same key and value written by several transactions: the batch written again). A transaction that
    wrote a batch's rows is a commit of it; several commits of one batch are a second write only where
    their rows repeat (a `df.write.jdbc` commits each partition alone: parts of one write, not two)."""
    repeated: dict[tuple[int, int], set[int]] = {}
    for batch, xids in repeats:
        for xid in xids:
            repeated.setdefault((batch, xid), set()).update(x for x in xids if x != xid)
    commits = []
    for xid, batch, count, committed_ms, query_id in sorted(rows, key=lambda row: (row[0], row[1])):
        commits.append(Commit(version=xid, operation="INSERT", app_id=query_id, txn_version=batch,
                              timestamp_ms=committed_ms, rows=count,
                              repeats=tuple(sorted(repeated.get((batch, xid), ()))), named_by="batch_id"))
    return commits


ROW_COLUMNS = tuple(map(itemgetter, range(5)))  # of a fetched row (xid, key, value, commit time, batch id), in C;
# zip(*rows) over a fetch of ten thousand rows costs several times more
CommitRow = tuple[int, int, int, int | None, str | None]  # xid, batch, rows, commit time ms, query id
ChangeRow = tuple[int, int | None, str, str | None, str | None, str | None, int | None]
# xid, batch id written, kind (I, U, D), key, value before, value after, commit time ms: the change log's order


def changes_history(rows: list[ChangeRow], query_ids: dict[tuple[int, int], str | None]
                    ) -> tuple[list[Commit], dict[int, tuple[State, State]]]:
    """A state table's commits from its change log, one per (transaction, batch it wrote) in commit order,
    and what each transaction did: each key it wrote with its value before its first change and after its
    last (no value: no row). A deletion names no batch: it is the transaction's first batch's."""
    changes: dict[int, tuple[State, State]] = {}
    counts: Counter[tuple[int, int | None]] = Counter()
    kinds: dict[int, set[str]] = {}
    committed: dict[int, int | None] = {}
    for xid, batch, kind, key, before, after, committed_ms in rows:
        was, now = changes.setdefault(xid, ({}, {}))
        name = as_bytes([key])[0]
        if name not in was:
            was[name] = [] if kind == "I" else as_bytes([before])
        now[name] = [] if kind == "D" else as_bytes([after])
        counts[xid, batch] += 1
        kinds.setdefault(xid, set()).add(OPERATIONS.get(kind, kind))
        committed[xid] = committed_ms
    for was, now in changes.values():  # a key that had no row and has none is no change
        for key in [k for k in now if not now[k] and not was[k]]:
            del was[key], now[key]
    batches: dict[int, dict[int, int]] = {}
    for (xid, batch), count in counts.items():
        if batch is not None:
            batches.setdefault(xid, {})[batch] = count
    for (xid, batch), count in counts.items():  # deletions to the transaction's first batch, when it has one
        if batch is None and xid in batches:
            first = min(batches[xid])
            batches[xid][first] += count
    order = sorted(batches, key=lambda xid: (committed[xid] or 0, xid))
    commits = [Commit(version=xid, operation=", ".join(sorted(kinds[xid])), app_id=query_ids.get((xid, batch)),
                      txn_version=batch, timestamp_ms=committed[xid] or 0, rows=count, named_by="batch_id")
               for xid in order for batch, count in sorted(batches[xid].items())]
    return commits, changes


class TransactionRows:
    """Fetched rows `(xid, key, value, commit time ms, batch id)`, in the table's order, made records as
    columns: a transaction's rows are a partition (numbered as first seen), their places its offsets,
    running on wherever its rows come (transactions that wrote at once interleave). What each transaction
    wrote of each batch is counted on the way, so that the history needs no second scan of the table. No
    object is made for each row."""

    def __init__(self) -> None:
        self.partitions: dict[int, int] = {}  # xid -> partition
        self.committed_ms: dict[int, int | None] = {}  # xid -> its commit time
        self.written: Counter[tuple[int, int | None]] = Counter()  # (xid, batch id) -> rows
        self._next: dict[int, int] = {}  # xid -> the offset of its next row

    def records(self, rows: list[tuple[int, str | None, str | None, int | None, int | None]]) -> Records:
        """One fetch's rows as records: each column encoded at once, then cut into runs of one transaction."""
        xids, keys, values, stamps, batches = (list(map(column, rows)) for column in ROW_COLUMNS)
        keys, values = as_bytes(keys), as_bytes(values)
        if None in values:
            values = [value or b"" for value in values]  # a null value: `unreadable`
        runs = []
        start = 0
        for xid, run in groupby(xids):
            end = start + countOf(run, xid)
            for batch_id, count in Counter(batches[start:end]).items():  # what it wrote of each batch
                self.written[xid, batch_id] += count
            partition = self.partitions.get(xid)
            if partition is None:
                partition = self.partitions[xid] = len(self.partitions)
                self.committed_ms[xid] = stamps[start]
            offset = self._next.get(xid, 0)
            runs.append(Records.run(partition, offset, keys[start:end], values[start:end], stamps[start] or 0))
            self._next[xid] = offset + end - start
            start = end
        if len(runs) == 1:
            return runs[0]
        batch = Records()
        for run_records in runs:
            batch.extend(run_records)
        return batch

    def commits(self, query_ids: dict[tuple[int, int], str | None]) -> list[CommitRow]:
        """`(xid, batch, rows, commit time ms, query id)` for each batch a transaction wrote rows of, with the
        query id of the batch row that transaction wrote (`query_ids`), for `history`."""
        return [(xid, batch, count, self.committed_ms[xid], query_ids.get((xid, batch)))
                for (xid, batch), count in self.written.items() if batch is not None]
