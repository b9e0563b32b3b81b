"""`certify --workers N`: the matrix of one sink spread over N worker processes (harness.certify.worker),
each with its own cluster on its own engine (`--docker-hosts`: worker i on host i modulo their number).

The baseline goes first, as it decides the rows that follow; the workers start their clusters meanwhile.
Rows go out from one queue, a worker taking the next when it finishes one, so a slow row holds up no
other. Rows are printed as they come and merged into one certificate and one run index.

Nothing is left running: a Ctrl-C or SIGTERM of this process (a KeyboardInterrupt here) sends SIGTERM
to every worker, then waits while each removes its cluster.
"""

from __future__ import annotations

import multiprocessing
import queue
from multiprocessing.queues import Queue
from pathlib import Path

from harness.certify.matrix import BASELINE, MatrixScenario
from harness.certify.rows import Row, plan_after_baseline, print_row
from harness.certify.shards import Shard, shard_of
from harness.certify.tally import Failed, Finished, Tally, Took, Worker
from harness.certify.worker import Job, serve
from harness.cluster.engine import docker_hosts as parse_docker_hosts
from harness.cluster.labels import new_run_id
from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.faults.space import Observation
from harness.progress import say
from harness.report import write_index
from harness.report.folders import certificate_dir, run_report_dir
from harness.subject.code_spec import CodeSpec

POLL_SECONDS = 1.0  # how often a quiet parent looks for workers that ended


def worker_engines(workers: int, docker_hosts: str, default: str) -> list[str]:
    """Each worker's engine: worker i on host i modulo their number, or every worker on `default`.
    Bad input (one line, exit 2): fewer than one worker, a host that is empty or not a URL."""
    if workers < 1:
        raise BadInput(f"--workers must be at least 1, not {workers}")
    hosts = parse_docker_hosts(docker_hosts)
    return [hosts[i % len(hosts)] if hosts else default for i in range(workers)]


def spread_note(engines: list[str]) -> list[str]:
    """How a run spreads its rows over these workers, in lines."""
    return [f"spread over {len(engines)} workers, each with its own cluster:",
            *[f"  w{i} on {engine}" for i, engine in enumerate(engines)],
            "the baseline runs first, then each worker takes the next row when it finishes one"]


def certify_spread(job: Job, sink: CodeSpec, engines: list[str], quick: bool, out: Path | None,
                   shard: Shard | None = None) -> tuple[Path, Observation, list[Row]]:
    """The matrix over one worker per engine: the certificate folder, what the baseline showed, every row (unknown
    where no worker could finish it)."""
    run_id = new_run_id()
    workers = [Worker(i, engine, f"{run_id}-w{i}") for i, engine in enumerate(engines)]
    for line in spread_note(engines):
        say(line)
    pool = Pool(job, workers, (out or certificate_dir(run_id)).resolve())
    try:
        seen, rows = pool.certify(sink, quick, shard)
    except BaseException:
        pool.stop(cut_short=True)
        raise
    else:
        pool.stop(cut_short=False)
    finally:
        write_index(run_report_dir(run_id), [run_report_dir(worker.run_id) for worker in workers])
    return pool.tally.folder, seen, rows


class Pool:
    """The worker processes, the queue they take rows from and the queue their messages come back on."""

    def __init__(self, job: Job, workers: list[Worker], folder: Path) -> None:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Docker client, no handlers
        self.tasks: Queue = context.Queue()
        self.results: Queue = context.Queue()
        self.processes = [context.Process(target=serve, args=(worker, job, self.tasks, self.results),
                                          name=f"certify-{worker.name}") for worker in workers]
        self.tally = Tally(workers, folder)
        self.printed = 0

    def certify(self, sink: CodeSpec, quick: bool, shard: Shard | None = None) -> tuple[Observation, list[Row]]:
        """The baseline, then the rows it calls for (the shard's share of them); returns what the baseline
        showed and every row in plan order."""
        baseline = BASELINE
        self.tasks.put(baseline)
        for process in self.processes:
            process.start()
        self._collect([baseline], None)
        seen = self.tally.observed(baseline)
        plan = shard_of(shard, plan_after_baseline(sink.spec, seen, quick))
        for row in [*plan, *[None] * len(self.processes)]:  # None: no more rows, remove your cluster
            self.tasks.put(row)
        self._collect(plan, len(plan) + 1)
        rows = self.tally.rows([baseline, *plan])
        for row in rows:
            if row.worker is None:  # never taken: every worker had ended
                self._print(row, len(rows))
        return seen, rows

    def _collect(self, rows: list[MatrixScenario], total: int | None) -> None:
        """Handle messages, printing rows as they settle, until all of `rows` are settled."""
        while not self.tally.settled(rows):
            try:
                self._handle(self.results.get(timeout=POLL_SECONDS), total)
            except queue.Empty:
                self._reap(total)

    def _handle(self, message: Took | Finished | Failed, total: int | None) -> None:
        if isinstance(message, Took):
            self.tally.took(message)
        elif isinstance(message, Finished):
            self._print(self.tally.finished(message), total)
        else:
            if message.status == EXIT_BAD_INPUT:  # the sink or pipeline: every worker would fail the same way
                raise BadInput(message.error)
            worker = self.tally.workers[message.worker]
            say(f"worker {worker.name} on {worker.engine} stopped: {message.error}")
            self._ended(message.worker, f"failed ({message.error.splitlines()[0]})", total)

    def _reap(self, total: int | None) -> None:
        """Workers that ended: after their last messages, the row each was running is unknown."""
        gone = [i for i, process in enumerate(self.processes) if not process.is_alive() and i not in self.tally.ended]
        while True:  # everything a gone worker sent is in the queue by now
            try:
                self._handle(self.results.get_nowait(), total)
            except queue.Empty:
                break
        for i in gone:
            if i not in self.tally.ended:  # a Failed message may have ended it already
                self._ended(i, f"ended (exit status {self.processes[i].exitcode})", total)

    def _ended(self, index: int, why: str, total: int | None) -> None:
        """Worker `index` ended: the row it was running is unknown."""
        row = self.tally.end(index, why)
        if row is not None:
            self._print(row, total)

    def _print(self, row: Row, total: int | None) -> None:
        self.printed += 1
        print_row(row, self.printed, total)

    def stop(self, cut_short: bool) -> None:
        """Wait for every worker to end; first send each SIGTERM when the run is cut short (Ctrl-C, SIGTERM,
        an error), so that it removes its cluster. Another Ctrl-C does not end the wait."""
        if cut_short:
            say("stopping the workers; each removes its cluster ...")
            for process in self.processes:
                if process.is_alive():
                    process.terminate()
        for process in self.processes:
            while process.pid is not None:  # started
                try:
                    process.join()
                    break
                except KeyboardInterrupt:
                    say("still waiting for the workers to remove their clusters")
