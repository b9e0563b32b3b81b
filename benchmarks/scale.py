"""How a scenario's cost grows with its work: the baseline and one fault scenario at 20k, 200k and 1M
records on 4 partitions, and 200k on 16, through one sink.

    python benchmarks/scale.py [--sink transactional] [--sizes 20000,200000,1000000] [--wide 200000]

Prints, per scenario: verdict, seconds in all, seconds consuming, records/s while consuming, the batch
size, the harness process's peak memory (its resident high-water mark, reset before each scenario) and
the cluster's (the largest sum of every container's memory, sampled every 2 s).
"""

from __future__ import annotations

import argparse
import re
import threading
import time
from pathlib import Path
from typing import NamedTuple

from cluster_start import cluster_memory

from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.run.scenario import batch_size
from harness.run.session import scenario, session
from harness.settings import SETTINGS

FAULT = "kill:executor@batch.planned:2"
GOALS = {"records_per_s": 5_000, "harness_mib": 900, "baseline_1m_s": 300}


HEADER = (f"{'scenario':<32} {'verdict':>7} {'seconds':>8} {'consume':>8} {'records/s':>10} {'batch':>7} "
          f"{'harness MiB':>12} {'cluster MiB':>12}")


class Row(NamedTuple):
    name: str
    outcome: str
    seconds: float
    consume: float
    rate: float
    batch: int
    harness_mib: float
    cluster_mib: float

    def line(self) -> str:
        return (f"{self.name:<32} {self.outcome:>7} {self.seconds:>8.0f} {self.consume:>8.0f} {self.rate:>10.0f} "
                f"{self.batch:>7} {self.harness_mib:>12.0f} {self.cluster_mib:>12.0f}")


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


def measure(cluster: Cluster, sink: str, records: int, partitions: int, faults: list[str]) -> Row:
    """One scenario's row. Its result is dropped on return: kept while the next scenario ran, a 1M
    baseline's output (its records and send log) counted in the fault run's peak."""
    name = f"scale-{records}-p{partitions}-{'fault' if faults else 'baseline'}"
    reset_peak_rss()
    started = time.monotonic()
    with ClusterPeak(cluster.run_id) as peak:
        result = scenario(cluster, name, sink=sink, faults=faults, records=records, partitions=partitions).run()
    seconds = time.monotonic() - started
    consume = result.seconds.get("consume", float("nan"))
    return Row(name, result.outcome, seconds, consume, records / consume, batch_size(records, partitions),
               peak_rss_mib(), peak.peak / 2**20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sink", default=SETTINGS["sink"].default)
    parser.add_argument("--sizes", default="20000,200000,1000000", help="records per run, on 4 partitions")
    parser.add_argument("--wide", type=int, default=200_000, help="records of the 16-partition runs (0: none)")
    args = parser.parse_args()
    runs = [(int(size), 4) for size in args.sizes.split(",")] + ([(args.wide, 16)] if args.wide else [])
    rows = []
    with session() as opened:
        for records, partitions in runs:
            for faults in ([], [FAULT]):
                row = measure(opened.cluster, args.sink, records, partitions, faults)
                rows.append(row)
                print(row.line(), flush=True)
    print(f"\nsink {args.sink}; fault scenario: {FAULT}")
    print(HEADER)
    for row in rows:
        print(row.line())
    print(f"goals: >= {GOALS['records_per_s']} records/s (passthrough), 1M baseline <= {GOALS['baseline_1m_s']} s, "
          f"harness <= {GOALS['harness_mib']} MiB at 1M")


if __name__ == "__main__":
    run_script(main)
