"""How a scenario's cost grows with its work: the baseline and one fault scenario at 20k, 200k and 1M
records on 4 partitions, and 200k on 16, through one sink into one output.

    python benchmarks/scale.py [--output kafka|delta|postgres|iceberg|paimon] [--store volume|s3] [--sink NAME]
                               [--sizes ...] [--wide 200000]

Prints, per scenario: verdict, seconds in all, seconds consuming, records/s while consuming, the batch
size, the harness process's peak memory (its resident high-water mark, reset before each scenario) and
the cluster's (the largest sum of every container's memory, sampled every 2 s). For a table output, also
the harness's reading and checking (records/s, the model's expected results left out: computed from the
input, not the read, as benchmarks/checker.py leaves them out) against a plain read of the same table
(benchmarks/plain_read.py: every row's key and value into Python, nothing checked), each the median of
three (the scenario's own read and check, then two more, taking turns with the plain reads), their
ratio, and for Delta the plain read stopped at Arrow. The table goes to docs/benchmarks/scale.md, dated.
"""

from __future__ import annotations

import argparse
import re
import statistics
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

from cluster_start import cluster_memory
from docs_page import record, section
from plain_read import delta_rows, postgres_rows

from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.output.base import Output
from harness.output.delta.table import DeltaTable, table_path
from harness.output.postgres.server import attached
from harness.output.postgres.table import PostgresTable, table_name
from harness.output.registry import NAMES
from harness.run.scenario import Scenario, batch_size
from harness.run.scenario_result import ScenarioResult
from harness.run.session import scenario, session
from harness.subject.code_spec import STATE_TABLE

FAULT = "kill:executor@batch.planned:2"
GOALS = {"records_per_s": 5_000, "harness_mib": 900, "baseline_1m_s": 300, "read_ratio": 0.7}
SAMPLES = 3  # of each read of a table (the harness's, the plain one): their median is the row's
REFERENCE = {"kafka": "transactional", "delta": "delta_streaming", "postgres": "postgres_foreach_batch_txn",
             "iceberg": "iceberg_streaming", "paimon": "paimon_streaming", "hudi": "hudi_streaming"}
PLAIN_READS = ("delta", "postgres")  # the outputs a plain read of is measured beside the harness's
COLUMNS = ("scenario", "verdict", "seconds", "consuming (s)", "records/s consuming", "batch", "harness peak MiB",
           "cluster peak MiB", "model (s)", "read and check (records/s)", "plain read (records/s)", "ratio",
           "plain read into Arrow only (records/s)")

TABLE_NOTE = (" Reading and checking: the median of three, the scenario's own read_and_check seconds without the "
              "model's (its expected results, computed from the input, as benchmarks/checker.py leaves them out) and "
              "two more reads and checks of the same table right after, each against the same model and with the "
              "same verdict. The plain read: the median of three, every row as its library gives it (pyarrow's "
              "dicts, psycopg's tuples through a server-side cursor), nothing checked (benchmarks/plain_read.py); "
              "for Delta also stopped at Arrow. The reads after the scenario take turns (plain, then the harness's), "
              "so that both meet the same caches and the same load from the machine's other work.")
HEADER = (f"{'scenario':<32} {'verdict':>7} {'seconds':>8} {'consume':>8} {'records/s':>10} {'batch':>7} "
          f"{'harness MiB':>12} {'cluster MiB':>12} {'model s':>8} {'read+check/s':>13} {'plain read/s':>13} "
          f"{'ratio':>6} {'Arrow only/s':>13}")


class Row(NamedTuple):
    name: str
    outcome: str
    seconds: float
    consume: float
    rate: float
    batch: int
    harness_mib: float
    cluster_mib: float
    model: float  # seconds computing the expected results, the first part of the scenario's read_and_check
    checked_rate: float  # records read and checked per second (read_and_check, the model left out; a table: median)
    plain_rate: float | None  # records per second of a plain read of the same table (None: a topic)
    arrow_rate: float | None  # the same read stopped at Arrow, no Python object made (Delta only)

    @property
    def ratio(self) -> float | None:
        return self.checked_rate / self.plain_rate if self.plain_rate else None

    def cells(self) -> tuple[object, ...]:
        """The row as the docs page shows it."""
        return (self.name, self.outcome, f"{self.seconds:.0f}", f"{self.consume:.0f}", f"{self.rate:,.0f}",
                f"{self.batch:,}", f"{self.harness_mib:,.0f}", f"{self.cluster_mib:,.0f}", f"{self.model:.1f}",
                f"{self.checked_rate:,.0f}",
                "" if self.plain_rate is None else f"{self.plain_rate:,.0f}",
                "" if self.ratio is None else f"{self.ratio:.2f}",
                "" if self.arrow_rate is None else f"{self.arrow_rate:,.0f}")

    def line(self) -> str:
        plain = "" if self.plain_rate is None else f"{self.plain_rate:.0f}"
        ratio = "" if self.ratio is None else f"{self.ratio:.2f}"
        arrow = "" if self.arrow_rate is None else f"{self.arrow_rate:.0f}"
        return (f"{self.name:<32} {self.outcome:>7} {self.seconds:>8.0f} {self.consume:>8.0f} {self.rate:>10.0f} "
                f"{self.batch:>7} {self.harness_mib:>12.0f} {self.cluster_mib:>12.0f} {self.model:>8.1f} "
                f"{self.checked_rate:>13.0f} {plain:>13} {ratio:>6} {arrow:>13}")


def reset_peak_rss() -> None:
    """Start the process's resident high-water mark (VmHWM) again from its current size (Linux)."""
    Path("/proc/self/clear_refs").write_text("5")


def peak_rss_mib() -> float:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) / 1024 if match else float("nan")


class ClusterPeak:
    """The largest memory sum of a run's containers while it is entered."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, cluster_memory(self.run_id))
            self._done.wait(2.0)

    def __enter__(self) -> ClusterPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


class TableRates(NamedTuple):
    """A table's read rates after its scenario, each the median of three samples."""

    checked: float  # read and checked by the harness: the scenario's own, then two more of the same table
    plain: float  # a plain read into Python
    arrow: float | None  # the plain read stopped at Arrow (Delta only)


def table_rates(cluster: Cluster, output: str, name: str, run: Scenario, result: ScenarioResult) -> TableRates:
    """The harness's read and check of scenario `name`'s table against a plain read of it, in rounds: a
    plain read (and for Delta one stopped at Arrow), then the harness's again, so that both meet the same
    caches and the same load from the machine's other work; the scenario's own read-and-check (with cold
    caches) is the harness's first sample."""
    if output == "postgres":
        server = attached(cluster)
        endpoint = server.for_harness()
        plain, arrow = partial(postgres_rows, endpoint, table_name(name)), None
        table = partial(PostgresTable, endpoint, server.for_sinks(), table_name(name))
    else:
        files, path = cluster.files, table_path(cluster.checkpoint(name))
        assert files is not None
        plain, arrow = partial(delta_rows, files, path), partial(delta_rows, files, path, python=False)
        table = partial(DeltaTable, files, path)
    checked = [len(result.read.records) / (result.seconds["read_and_check"] - result.seconds["model"])]
    plain_rates, arrow_rates = [], []
    for round_ in range(SAMPLES):
        plain_rates.append(rate(plain))
        if arrow is not None:
            arrow_rates.append(rate(arrow))
        if round_ < SAMPLES - 1:
            checked.append(checked_rate(table(), run, result))
    return TableRates(statistics.median(checked), statistics.median(plain_rates),
                      statistics.median(arrow_rates) if arrow_rates else None)


def rate(read: Callable[[], int]) -> float:
    """Rows per second of `read` (which returns how many it read)."""
    started = time.monotonic()
    rows = read()
    return rows / (time.monotonic() - started)


def checked_rate(table: Output, run: Scenario, result: ScenarioResult) -> float:
    """Records per second of the harness's read and check of the table again, as the scenario does it (the
    model, computed from the input, before the clock starts): the same verdict or the benchmark stops."""
    check = (run.oracle.state_check if result.table == STATE_TABLE else run.oracle.check)(run.workload, result.sends,
                                                                                        None)
    started = time.monotonic()
    read = table.read(on_batch=check.feed)
    table.commits()
    verdict = check.verdict(read)
    seconds = time.monotonic() - started
    if verdict.outcome != result.verdict.outcome:
        raise RuntimeError(f"{run.name}: read again, {verdict.outcome}; in the scenario, {result.verdict.outcome}")
    return len(read.records) / seconds


def measure(cluster: Cluster, output: str, sink: str, records: int, partitions: int, faults: list[str],
            store: str = "volume") -> Row:
    """One scenario's row: its peak memory taken before the plain read that follows it. Its result is
    dropped on return: kept while the next scenario ran, a 1M baseline's output (its records and send log)
    counted in the fault run's peak."""
    name = f"scale-{output}-{records}-p{partitions}-{'fault' if faults else 'baseline'}"
    reset_peak_rss()
    started = time.monotonic()
    run = scenario(cluster, name, sink=sink, faults=faults, records=records, partitions=partitions, output=output,
                   store=store)
    with ClusterPeak(cluster.run_id) as peak:
        result = run.run()
    seconds = time.monotonic() - started
    harness_mib = peak_rss_mib()
    consume = result.seconds.get("consume", float("nan"))
    model = result.seconds["model"]
    if output not in PLAIN_READS or store != "volume":  # the plain reads read the volume
        rates = TableRates(len(result.read.records) / (result.seconds["read_and_check"] - model), None, None)
    else:
        rates = table_rates(cluster, output, name, run, result)
    return Row(name, result.outcome, seconds, consume, records / consume, batch_size(records, partitions),
               harness_mib, peak.peak / 2**20, model, *rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="kafka", choices=NAMES)
    parser.add_argument("--sink", help="the sink (default: the output's reference: "
                        + ", ".join(f"{sink} for {output}" for output, sink in REFERENCE.items()) + ")")
    parser.add_argument("--store", default="volume", choices=("volume", "s3"), help="where a table lives")
    parser.add_argument("--sizes", default="20000,200000,1000000", help="records per run, on 4 partitions")
    parser.add_argument("--wide", type=int, default=200_000, help="records of the 16-partition runs (0: none)")
    parser.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    args = parser.parse_args()
    sink = args.sink or REFERENCE[args.output]
    if args.output == "delta":
        import pyarrow.parquet  # noqa: F401 - imported once a process (half a second), not a read's cost
    runs = [(int(size), 4) for size in args.sizes.split(",")] + ([(args.wide, 16)] if args.wide else [])
    rows = []
    with session() as opened:
        for records, partitions in runs:
            for faults in ([], [FAULT]):
                row = measure(opened.cluster, args.output, sink, records, partitions, faults, args.store)
                rows.append(row)
                print(row.line(), flush=True)
    into = args.output + (f" on {args.store}" if args.store != "volume" else "")
    plain = args.output in PLAIN_READS and args.store == "volume"
    print(f"\nsink {sink} into {into}; fault scenario: {FAULT}")
    print(HEADER)
    for row in rows:
        print(row.line())
    goals = (f"goals: >= {GOALS['records_per_s']} records/s (passthrough), 1M baseline <= {GOALS['baseline_1m_s']} s, "
             f"harness <= {GOALS['harness_mib']} MiB at 1M"
             + (f", reading and checking >= {GOALS['read_ratio']} of a plain read"
                if plain else ""))
    print(goals)
    command = (f"python benchmarks/scale.py --output {args.output} --store {args.store} --sink {sink} "
               f"--sizes {args.sizes} --wide {args.wide}")
    record("scale", "Scale and memory", "A baseline and one fault scenario at 20k, 200k and 1M records "
           "(`benchmarks/scale.py`): time, records/s and peak memory of the harness and the cluster. Into a table "
           "(`--output delta` or `postgres`), also the harness's reading and checking against a plain read of the "
           "same table.",
           section(command, COLUMNS, [row.cells() for row in rows], f"Sink {sink} into {into}; the fault "
                   f"scenario: `{FAULT}`. {goals[0].upper()}{goals[1:]}." + (TABLE_NOTE if plain else "")
                   + (f" {args.note}" if args.note else "")))


if __name__ == "__main__":
    run_script(main)
