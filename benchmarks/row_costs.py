"""What a row costs, phase by phase, alone and beside other clusters: the baseline and a driver-kill row
(by default the reference sink's `kill-driver-txn.pre_commit`), each run `--runs` times on each of
`--clusters` clusters at once, for each cluster count asked.

    python benchmarks/row_costs.py [--runs 3] [--clusters 1 2 3] [--sink transactional]
                                   [--row kill-driver-txn.pre_commit] [--records N] [--record]

Each cluster is a process of its own (a session: images, cluster, run folder), as certify's workers are;
once every cluster of a count is up they start their rows together, each the baseline then the driver
row, `--runs` times. The phases are the rows' own (result.json's `phases`, harness.run.phases, and the
scenario's `seconds`): the driver's container start, its JVM until its SparkSession, the session until
the query runs, the query until its first batch, the first batch and the median batch, the fault until
the next driver's query runs (the kill and the old driver's removal, then its container, JVM and
session), the next driver until its first batch, and the read and check; the medians over every run on
every cluster. Then rows per minute for each count: the rows finished over the time from the common
start until the last row ended, and each cluster's start (its session opened). `--record` puts the
table first on docs/benchmarks/row_costs.md, dated.

And the CPU time each row took, by container: the driver's (its JVM, the launcher's and the Python driver),
the workers' (the executors and their Python workers, the worker daemons), Kafka's brokers and the rest (the
master, the gate, toxiproxy), from the row's start to the next row's. Every container of the cluster is
read from the engine every second; a container's time is its last reading, so a driver removed at the end
of its row loses at most its last second. On a machine whose cores every cluster shares, the CPU time, not
the seconds, says what a row costs beside others.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import signal
import statistics
import threading
import time
from dataclasses import replace
from multiprocessing.synchronize import Barrier
from typing import NamedTuple

from docker.errors import APIError
from docs_page import record, section

from harness.certify.matrix import BASELINE
from harness.certify.room import cpu_time, run_stats
from harness.certify.rows import MatrixRun, Row, observed, rows_for, run_row
from harness.interrupt import run_script, terminate_like_ctrl_c
from harness.progress import say, speak_as
from harness.run.scenario_result import ScenarioResult
from harness.run.session import session
from harness.settings import SETTINGS, from_environment

TITLE = "Row costs"
WHAT = ("Where a row's time goes, phase by phase, alone and beside other clusters, and what spreading rows over "
        "clusters gains, from `benchmarks/row_costs.py`: the baseline and a driver-kill row, each phase the median "
        "over every run on every cluster, read from the rows' own `phases` (harness.run.phases) and `seconds`, and "
        "each row's CPU time by container, read from the engine.")
START_WAIT_S = 900.0  # the longest a cluster waits for the others of its count to be up
# (label, where: a phase of result.json's `phases`, or `seconds:` a part of the scenario's `seconds`)
PHASES = (
    ("row, in all", "row"),
    ("topics and input", "seconds:produce"),
    ("driver: container start", "driver_container"),
    ("driver: JVM start to SparkSession", "driver_jvm_to_session"),
    ("driver: SparkSession to query", "driver_session_to_query"),
    ("query start to first batch planned", "query_to_first_batch"),
    ("first batch", "first_batch"),
    ("batch (median)", "batch_median"),
    ("batches", "batches"),
    ("fault to the next driver's query", "fault_to_next_driver"),
    ("  the kill and the old driver removed", "restart_kill_to_submit"),
    ("  next driver: container start", "restart_container"),
    ("  next driver: JVM start to SparkSession", "restart_jvm_to_session"),
    ("  next driver: SparkSession to query", "restart_session_to_query"),
    ("next driver's query to its first batch", "restart_query_to_batch"),
    ("fault to recovery (first batch after it)", "fault_to_recovery"),
    ("last batch to read", "last_batch_to_read"),
    ("read and check", "seconds:read_and_check"),
    ("CPU s: the driver's container", "cpu:driver"),
    ("CPU s: the workers' containers (executors)", "cpu:workers"),
    ("CPU s: Kafka's brokers", "cpu:kafka"),
    ("CPU s: the rest (master, gate, toxiproxy)", "cpu:rest"),
    ("CPU s: every container", "cpu:all"),
)
CPU_READ_S = 1.0  # how often the cluster's containers are read


def role(alias: str) -> str:
    """The CPU row of a container of the cluster, by its alias (harness.cluster.service names it run-alias)."""
    for prefix, name in (("driver", "driver"), ("spark-worker", "workers"), ("kafka", "kafka")):
        if alias.startswith(prefix):
            return name
    return "rest"


class CpuReader:
    """Each container's CPU time in one run, by container (its role kept), read every CPU_READ_S in a thread of
    its own, so that a driver's time counts though the container is gone when its row ends."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seconds: dict[str, tuple[str, float]] = {}  # container id -> (role, CPU seconds as last read)
        self._stop = threading.Event()
        self._read_once()  # before the first row: what the cluster's start took is not the row's
        self._thread = threading.Thread(target=self._read, name="cpu-reader", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.wait(CPU_READ_S):
            self._read_once()

    def _read_once(self) -> None:
        try:
            read = run_stats(self.run_id)
        except (APIError, OSError) as error:  # an engine slow to answer: the next reading counts
            say(f"CPU not read: {error}")
            return
        for container, stats in read:
            self.seconds[container.id] = (role(container.name.removeprefix(f"{self.run_id}-")), cpu_time(stats) / 1e9)

    def snapshot(self) -> dict[str, tuple[str, float]]:
        return dict(self.seconds)

    @staticmethod
    def between(before: dict[str, tuple[str, float]], after: dict[str, tuple[str, float]]) -> dict[str, float]:
        """CPU seconds by role (and `all`) from one snapshot to a later one."""
        spent: dict[str, float] = {f"cpu:{name}": 0.0 for name in ("driver", "workers", "kafka", "rest", "all")}
        for container, (name, used) in after.items():
            delta = used - before.get(container, (name, 0.0))[1]
            spent[f"cpu:{name}"] += delta
            spent["cpu:all"] += delta
        return spent

    def stop(self) -> None:
        self._stop.set()


class Finished(NamedTuple):
    """A row that ran: its message for the parent, its figures, and the CPU readings when it started."""

    message: tuple
    figures: dict[str, float]
    cpu_at_start: dict[str, tuple[str, float]]


def send(results: multiprocessing.Queue, row: Finished, cpu: dict[str, float]) -> None:
    """A row's message to the parent, with its figures and its CPU time by role."""
    results.put((*row.message, row.figures | cpu))


def measured(row: Row, result: ScenarioResult | None) -> dict[str, float]:
    """One row's figures by the keys of PHASES."""
    figures: dict[str, float] = {"row": row.seconds, **(row.phases or {})}
    if result is not None:
        figures.update((f"seconds:{key}", value) for key, value in result.seconds.items())
    return figures


def cluster_body(index: int, args: argparse.Namespace, barrier: Barrier, results: multiprocessing.Queue) -> None:
    """One cluster's process: its session, then (once every cluster is up) the rows; each result to `results`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's Ctrl-C arrives as SIGTERM
    terminate_like_ctrl_c()
    speak_as(f"c{index}")
    try:
        opening = time.monotonic()
        with session() as opened:
            results.put(("cluster", index, time.monotonic() - opening))
            cpu = CpuReader(opened.cluster.run_id)
            barrier.wait(START_WAIT_S)
            run = MatrixRun(args.sink, records=args.records)
            driver_row = None
            last: Finished | None = None  # the row before: sent once the next one starts, its CPU known then
            for n in range(args.runs):
                for planned in ("baseline", args.row):
                    row = BASELINE if planned == "baseline" else driver_row
                    assert row is not None
                    started, before = time.time(), cpu.snapshot()
                    if last is not None:  # the row before, with its CPU up to this one's start
                        send(results, last, cpu.between(last.cpu_at_start, before))
                    outcome, result = run_row(opened.cluster, run, replace(row, name=f"{row.name}-{n}"))
                    ended = time.time()
                    if planned == "baseline":
                        driver_row = next((r for r in rows_for(observed(result), quick=False) if r.name == args.row),
                                          None)
                        if driver_row is None:
                            raise SystemExit(f"row {args.row} is not in the matrix of {args.sink}")
                    last = Finished(("row", index, planned, outcome.outcome, started, ended), measured(outcome, result),
                                    before)
            time.sleep(2 * CPU_READ_S)  # the last row's containers read once more
            if last is not None:
                send(results, last, cpu.between(last.cpu_at_start, cpu.snapshot()))
            cpu.stop()
    except BaseException as error:
        barrier.abort()
        first = str(error).splitlines()[0] if str(error) else ""  # a container's log tail is in the session's logs
        results.put(("failed", index, f"{type(error).__name__}: {first}"))
        raise


def run_count(count: int, args: argparse.Namespace) -> dict:
    """Every row on `count` clusters at once: the rows' figures, the clusters' starts, the common window."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Docker client, no handlers
    barrier, results = context.Barrier(count), context.Queue()
    processes = [context.Process(target=cluster_body, args=(i, args, barrier, results), name=f"row-costs-c{i}")
                 for i in range(count)]
    for process in processes:
        process.start()
    rows, starts, failures = [], [], []
    try:
        while any(p.is_alive() for p in processes) or not results.empty():
            try:
                message = results.get(timeout=1.0)
            except queue.Empty:
                continue
            if message[0] == "cluster":
                starts.append(message[2])
            elif message[0] == "row":
                _, index, planned, outcome, started, ended, figures = message
                rows.append({"cluster": index, "row": planned, "outcome": outcome, "started": started,
                             "ended": ended, "figures": figures})
                say(f"{count} cluster(s), c{index}: {planned} {outcome} in {figures['row']:.0f} s")
            else:
                failures.append(f"c{message[1]}: {message[2]}")
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
    if failures:
        raise SystemExit(f"{count} cluster(s): " + "; ".join(failures))
    return {"count": count, "rows": rows, "starts": starts}


def medians(rows: list[dict], planned: str) -> dict[str, float]:
    """Each phase's median over the rows of one kind."""
    found: dict[str, list[float]] = {}
    for row in rows:
        if row["row"] == planned:
            for key, value in row["figures"].items():
                found.setdefault(key, []).append(value)
    return {key: statistics.median(values) for key, values in found.items()}


def rate(counted: dict) -> tuple[int, float, float]:
    """Rows finished, the minutes from the common start to the last row's end, rows per minute."""
    rows = counted["rows"]
    window = (max(r["ended"] for r in rows) - min(r["started"] for r in rows)) / 60
    return len(rows), window, len(rows) / window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each row on each cluster (medians over them)")
    parser.add_argument("--clusters", type=int, nargs="+", default=[1, 2, 3], help="cluster counts, each in turn")
    parser.add_argument("--sink", default=SETTINGS["sink"].default)
    parser.add_argument("--row", default="kill-driver-txn.pre_commit", help="the driver-kill row (its class's name)")
    parser.add_argument("--records", type=int, default=from_environment("records"))
    parser.add_argument("--record", action="store_true", help="put the table first on docs/benchmarks/row_costs.md")
    args = parser.parse_args()
    counted = [run_count(count, args) for count in args.clusters]
    columns = ["phase (s)"]
    table: list[list[object]] = [[label] for label, _ in PHASES]
    for found in counted:
        for planned in ("baseline", args.row):
            columns.append(f"{'baseline' if planned == 'baseline' else 'driver kill'}, {found['count']} "
                           f"cluster{'s' * (found['count'] > 1)}")
            median = medians(found["rows"], planned)
            for line, (_, key) in zip(table, PHASES, strict=True):
                line.append("-" if key not in median else f"{median[key]:g}" if key == "batches" else
                            f"{median[key]:.1f}")
    spread = [("clusters", "rows", "minutes", "rows per minute", "cluster start (median s)")]
    for found in counted:
        rows, minutes, per_minute = rate(found)
        spread.append((found["count"], rows, f"{minutes:.1f}", f"{per_minute:.2f}",
                       f"{statistics.median(found['starts']):.0f}"))
    outcomes = sorted({f"{r['row']}: {r['outcome']}" for found in counted for r in found["rows"]})
    print(f"sink {args.sink}; rows baseline and {args.row}; {args.runs} run(s) of each per cluster; medians")
    widths = [max(len(str(line[i])) for line in [columns, *table]) for i in range(len(columns))]
    for line in [columns, *table]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)))
    for line in spread:
        print("  ".join(f"{cell!s:>24}" for cell in line))
    print("outcomes: " + ", ".join(outcomes))
    load = ", ".join(f"{average:.1f}" for average in os.getloadavg())
    print(f"load average at the end (1, 5, 15 min): {load}")
    if args.record:
        command = (f"python benchmarks/row_costs.py --runs {args.runs} --clusters {' '.join(map(str, args.clusters))} "
                   f"--sink {args.sink} --row {args.row} --records {args.records}")
        lines = [f"| {' | '.join(map(str, line))} |" for line in spread]
        rates = "\n".join([lines[0], f"|{'---|' * len(spread[0])}", *lines[1:]])
        notes = (f"Rows per cluster count:\n\n{rates}\n\nOutcomes: {', '.join(outcomes)}. The machine's load "
                 f"average at the end (1, 5, 15 min): {load}.")
        record("row_costs", TITLE, WHAT, section(command, columns, table, notes))


if __name__ == "__main__":
    run_script(main)
