"""The harness's read and check of a table against a plain read of it, without a cluster: fast to iterate on.

    python benchmarks/table_check.py [--records 1000000] [--repeats 3] [--profile]

Writes the passthrough pipeline's output for a workload as Spark's Delta sink writes it (five versions of
four Parquet files, every row `key` and `value` as Spark's to_json writes it) into a temporary folder,
then takes turns: the plain read of benchmarks/plain_read.py (pyarrow's batches as dicts), the harness's
Delta read and check (harness.output.delta, the pipeline's checkers against its model), and the same rows
as PostgreSQL fetches give them (tuples) made records and checked (harness.output.postgres; the fetch
itself left out, so no ratio), and a floor: the values decoded to bytes and each row's identity found by the
pipeline's own batch `identities`, nothing checked off (what any check of every row's identity must do at
least; its ratio bounds every such check's). Prints each one's CPU and wall seconds, the median of
`repeats`; the model
is computed once, before (as scale.py leaves it out). On a busy machine compare CPU seconds: wall seconds
follow the load. `--profile` prints where the harness's Delta read and check spends its CPU (the checker's
thread included: it runs on the reading thread there).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from plain_read import delta_rows

from harness.checker.verdict import Expected
from harness.client.reader import ReadResult
from harness.client.records import Records
from harness.client.workload import Workload
from harness.interrupt import run_script
from harness.output import rows as table_rows
from harness.output.delta import table as delta
from harness.output.postgres.table import BATCH
from harness.output.postgres.transactions import TransactionRows
from harness.output.rows import BATCH as FILE_BATCH
from harness.output.rows import cells_as_bytes
from harness.subject.pipeline import Pipeline, load_pipeline

VERSIONS, FILES = 5, 4  # as delta_streaming writes a 1M backlog: five batches, a file per input partition


class LocalFiles:
    """The relay's file service (harness.output.commits.Files) over a local folder."""

    def walk(self, path: str) -> list[str]:
        return [os.path.relpath(os.path.join(folder, name), path) for folder, _, names in os.walk(path)
                for name in names]

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as file:
            return file.read()


def write_table(path: str, workload: Workload) -> list[tuple[int, str, str, int, int]]:
    """The output as a Delta table at `path`; its rows as PostgreSQL fetches give them (xid, key, value,
    commit time, batch id)."""
    os.makedirs(f"{path}/_delta_log")
    events = list(workload.generate())
    per_version = -(-len(events) // VERSIONS)
    rows = []
    for version in range(VERSIONS):
        adds = []
        for part in range(FILES):
            chosen = [e for e in events[version * per_version:(version + 1) * per_version]
                      if int(e.key[1:]) % FILES == part]
            values = [json.dumps({"id": e.id, "key": e.key, "seq": e.seq, "ts": e.ts, "amount": e.amount,
                                  "amount_cents": round(e.amount * 100)}, separators=(",", ":")) for e in chosen]
            name = f"part-{version}-{part}.parquet"
            pq.write_table(pa.table({"key": [e.key for e in chosen], "value": values}), f"{path}/{name}")
            adds.append({"add": {"path": name, "size": 0, "partitionValues": {}, "modificationTime": 0,
                                 "dataChange": True}})
            rows += [(1000 + version * FILES + part, e.key, value, version, version)
                     for e, value in zip(chosen, values, strict=True)]
        actions = [{"txn": {"appId": "q", "version": version}},
                   {"commitInfo": {"operation": "STREAMING UPDATE", "timestamp": version,
                                   "operationParameters": {"queryId": "q", "epochId": str(version)}}}, *adds]
        with open(f"{path}/_delta_log/{version:020d}.json", "w") as log:
            log.write("".join(json.dumps(action) + "\n" for action in actions))
    return rows


def delta_check(pipeline: Pipeline, expected: dict[str, Expected], path: str) -> int:
    """The harness's read and check of the table, as a scenario does it: the rows read and checked."""
    check = pipeline.output_check(expected)
    table = delta.DeltaTable(LocalFiles(), path)
    read = table.read(on_batch=check.feed)
    table.commits()
    verdict = check.verdict(read)
    assert verdict.outcome == "pass", verdict.summary()
    return len(read.records)


def postgres_check(pipeline: Pipeline, expected: dict[str, Expected], rows: list[tuple]) -> int:
    """The same rows as PostgreSQL fetches give them, made records and checked (the server left out)."""
    check = pipeline.output_check(expected)
    transactions, records = TransactionRows(), Records()
    for start in range(0, len(rows), BATCH):
        batch = transactions.records(rows[start:start + BATCH])
        records.extend(batch)
        check.feed(batch)
    verdict = check.verdict(ReadResult(records, {}, {}))
    assert verdict.outcome == "pass", verdict.summary()
    return len(records)


def identities_only(pipeline: Pipeline, path: str) -> int:
    """The floor: the snapshot's values as bytes and their identities, nothing kept or checked off."""
    table = delta.DeltaTable(LocalFiles(), path)
    rows = 0
    for _, name in table.log.snapshot().files:  # type: ignore[union-attr]
        for arrow in pq.ParquetFile(table.log.data_path(name)).iter_batches(batch_size=FILE_BATCH,
                                                                            columns=["value"]):
            values = cells_as_bytes(arrow.column("value"))
            rows += len(pipeline.identities(values))  # type: ignore[misc]
    return rows


def seconds(run: Callable[[], object]) -> tuple[float, float]:
    """CPU and wall seconds of one run."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


@contextlib.contextmanager
def on_this_thread() -> Iterator[None]:
    """The checker fed on the reading thread, so that a profile sees its work."""
    threaded = table_rows.feeding

    @contextlib.contextmanager
    def inline(on_batch):  # type: ignore[no-untyped-def]
        yield on_batch

    table_rows.feeding = inline  # type: ignore[assignment]
    try:
        yield
    finally:
        table_rows.feeding = threaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    pipeline = load_pipeline("harness.catalog.pipelines.passthrough")
    workload = Workload(args.records, seed=3)
    expected = pipeline.expected(workload.inputs())
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/table"
        rows = write_table(path, workload)
        if args.profile:
            profile = cProfile.Profile(time.process_time)
            with on_this_thread():
                profile.runcall(delta_check, pipeline, expected, path)
            pstats.Stats(profile).sort_stats("tottime").print_stats(20)
            return
        reads: dict[str, Callable[[], object]] = {
            "plain read (pyarrow dicts)": lambda: delta_rows(LocalFiles(), path),
            "harness: Delta read and check": lambda: delta_check(pipeline, expected, path),
            "harness: PostgreSQL rows made records and checked": lambda: postgres_check(pipeline, expected, rows),
            "floor: values as bytes, identities found": lambda: identities_only(pipeline, path),
        }
        taken: dict[str, list[tuple[float, float]]] = {name: [] for name in reads}
        for _ in range(args.repeats):
            for name, read in reads.items():
                taken[name].append(seconds(read))
    print(f"{args.records:,} rows, {VERSIONS} versions of {FILES} files, median of {args.repeats}")
    plain_cpu = statistics.median(cpu for cpu, _ in taken["plain read (pyarrow dicts)"])
    for name, samples in taken.items():
        cpu, wall = (statistics.median(column) for column in zip(*samples, strict=True))
        against = f"  CPU ratio to the plain read {plain_cpu / cpu:.2f}" if "Delta" in name or "floor" in name else ""
        print(f"{name:<52} CPU {cpu:6.2f} s  wall {wall:6.2f} s{against}")


if __name__ == "__main__":
    run_script(main)
