"""`certify --workers N` (and `--quick`'s default): the matrix of one sink spread over worker processes
(harness.certify.worker), each with its own cluster on its own engine (`--docker-hosts`: worker i on
host i modulo their number).

The baseline goes first, as it decides the rows that follow; the other workers start their clusters
meanwhile. The parent hands each free worker its next row (harness.certify.lanes: longest first, a row
that must run alone alone), so a slow row holds up no other. With `sizing` (the quick default on one
engine) the parent decides how many clusters to run from their measured memory and the plan. Rows are
printed as they come and merged into one certificate (saying which rows ran at once) and one run index.

Nothing is left running: a Ctrl-C or SIGTERM of this process (a KeyboardInterrupt here) sends SIGTERM
to every worker, then waits while each removes its cluster.
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from functools import partial
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Protocol

from harness.certify.lanes import Lanes, clusters_worth, longest_first
from harness.certify.matrix import BASELINE, MatrixScenario
from harness.certify.rows import Row, plan_after_baseline, print_row
from harness.certify.shards import Shard, shard_of
from harness.certify.tally import Failed, Finished, Ready, Tally, Took, Worker
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
MOST_CLUSTERS = 3  # the quick default's most clusters on one engine (the plan and the memory may want fewer)


class Sizer(Protocol):
    """How many clusters to run on one engine (harness.certify.room.Sizing; a stand-in in the tests)."""

    notes: list[str]

    def at_start(self) -> int: ...

    def watch(self, run_id: str) -> None: ...

    def after_baseline(self, run_id: str, running: int, wanted: Callable[[float], int]) -> int: ...


def worker_engines(workers: int, docker_hosts: str, default: str) -> list[str]:
    """Each worker's engine: worker i on host i modulo their number, or every worker on `default`.
    Bad input (one line, exit 2): fewer than one worker, a host that is empty or not a URL."""
    if workers < 1:
        raise BadInput(f"--workers must be at least 1, not {workers}")
    hosts = parse_docker_hosts(docker_hosts)
    return [hosts[i % len(hosts)] if hosts else default for i in range(workers)]


def spread_note(engines: list[str], sized: bool = False) -> list[str]:
    """How a run spreads its rows over these workers, in lines."""
    if sized:
        return [f"spread over up to {len(engines)} clusters on {engines[0]}, as many as shorten the plan with its "
                "cores shared and as its memory holds (measured)",
                "the baseline runs first, then each cluster takes the longest row left when it finishes one; a live "
                "row runs alone"]
    return [f"spread over {len(engines)} workers, each with its own cluster:",
            *[f"  w{i} on {engine}" for i, engine in enumerate(engines)],
            "the baseline runs first, then each worker takes the longest row left when it finishes one"]


def certify_spread(job: Job, sink: CodeSpec, engines: list[str], quick: bool, out: Path | None,
                   shard: Shard | None = None, sizing: Sizer | None = None) -> tuple[Path, Observation, list[Row]]:
    """The matrix over one worker per engine (with `sizing`: as many of them as it decides): the certificate
    folder, what the baseline showed, every row (unknown where no worker could finish it)."""
    run_id = new_run_id()
    workers = [Worker(i, engine, f"{run_id}-w{i}") for i, engine in enumerate(engines)]
    for line in spread_note(engines, sizing is not None):
        say(line)
    pool = Pool(job, workers, (out or certificate_dir(run_id)).resolve(), Lanes(len(set(engines)) == 1), sizing)
    try:
        seen, rows = pool.certify(sink, quick, shard)
    except BaseException:
        pool.stop(cut_short=True)
        raise
    else:
        pool.stop(cut_short=False)
    finally:
        write_index(run_report_dir(run_id), [run_report_dir(workers[i].run_id) for i in pool.started])
    return pool.tally.folder, seen, rows


class Pool:
    """The worker processes, a queue of rows for each and the queue their messages come back on."""

    def __init__(self, job: Job, workers: list[Worker], folder: Path, lanes: Lanes,
                 sizing: Sizer | None = None) -> None:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Docker client, no handlers
        self.tasks: list[Queue] = [context.Queue() for _ in workers]
        self.results: Queue = context.Queue()
        self.processes = [context.Process(target=serve, args=(worker, job, self.tasks[worker.index], self.results),
                                          name=f"certify-{worker.name}") for worker in workers]
        self.tally = Tally(workers, folder)
        self.lanes, self.sizing = lanes, sizing
        self.started: list[int] = []  # the workers started, in order
        self.ready: set[int] = set()  # workers whose cluster is up
        self.pending: list[MatrixScenario] = []  # rows not handed out yet, in the order they go
        self.alone: set[str] = set()  # rows to run again alone
        self.printed = 0
        self.total: int | None = None
        self.planned: dict[str, MatrixScenario] = {}

    def certify(self, sink: CodeSpec, quick: bool, shard: Shard | None = None) -> tuple[Observation, list[Row]]:
        """The baseline, then the rows it calls for (the shard's share of them); returns what the baseline
        showed and every row in plan order."""
        baseline = BASELINE
        self.pending = [baseline]
        self._start(self.sizing.at_start() if self.sizing else len(self.processes))
        self._collect([baseline])
        seen = self.tally.observed(baseline)
        plan = shard_of(shard, plan_after_baseline(sink.spec, seen, quick))
        ran = self.tally.done.get(baseline.name)
        base_s = ran.seconds if ran else 0.0
        if self.sizing and ran and ran.worker and plan:  # its cluster is measured: how many clusters the rows get
            measured = next(worker.run_id for worker in self.tally.workers if worker.name == ran.worker)
            self._start(self.sizing.after_baseline(measured, len(self.started), partial(
                clusters_worth, plan, base_s, self.lanes, len(self.processes))))
            for line in self.sizing.notes:
                say(f"clusters {line}")
        self.pending, self.total = longest_first(plan, base_s), len(plan) + 1
        self.planned = {row.name: row for row in plan}
        self._dispatch()
        self._collect(plan)
        for index in self.started:  # None: no more rows, remove your cluster
            self.tasks[index].put(None)
        rows = self.tally.rows([baseline, *plan])
        for row in rows:
            if row.worker is None:  # never taken: every worker had ended
                self._print(row)
        return seen, rows

    def _start(self, count: int) -> None:
        """Start workers until `count` run (each starts its cluster)."""
        for index in range(len(self.started), min(count, len(self.processes))):
            self.processes[index].start()
            self.started.append(index)
            if self.sizing:
                self.sizing.watch(self.tally.workers[index].run_id)

    def _dispatch(self) -> None:
        """Hand each free worker whose cluster is up the next row the lanes allow."""
        for index in sorted(self.ready - set(self.tally.running) - self.tally.ended):
            row = self.lanes.next_row(self.pending, list(self.tally.running.values()), frozenset(self.alone))
            if row is None:
                return
            self.pending.remove(row)
            self.tally.took(Took(index, row))
            self.tasks[index].put(row)

    def _collect(self, rows: list[MatrixScenario]) -> None:
        """Handle messages, handing out rows and printing them as they settle, until all of `rows` are settled."""
        while not self.tally.settled(rows) and len(self.tally.ended) < len(self.started):
            try:
                self._handle(self.results.get(timeout=POLL_SECONDS))
            except queue.Empty:
                self._reap()
            self._dispatch()

    def _handle(self, message: Ready | Finished | Failed) -> None:
        if isinstance(message, Ready):
            self.ready.add(message.worker)
        elif isinstance(message, Finished):
            row = self.tally.finished(message)
            if self.tally.again(row):
                say(f"{row.scenario.name}: ineffective beside {', '.join(row.beside or [])} ({row.error}); "
                    "it runs again alone, and that run counts")
                self.alone.add(row.scenario.name)
                self.pending.insert(0, self.planned[row.scenario.name])  # as planned: its ways too
            else:
                self._print(row)
        else:
            if message.status == EXIT_BAD_INPUT:  # the sink or pipeline: every worker would fail the same way
                raise BadInput(message.error)
            worker = self.tally.workers[message.worker]
            say(f"worker {worker.name} on {worker.engine} stopped: {message.error}")
            self._ended(message.worker, f"failed ({message.error.splitlines()[0]})")

    def _reap(self) -> None:
        """Workers that ended: after their last messages, the row each was running is unknown."""
        gone = [i for i in self.started if not self.processes[i].is_alive() and i not in self.tally.ended]
        while True:  # everything a gone worker sent is in the queue by now
            try:
                self._handle(self.results.get_nowait())
            except queue.Empty:
                break
        for i in gone:
            if i not in self.tally.ended:  # a Failed message may have ended it already
                self._ended(i, f"ended (exit status {self.processes[i].exitcode})")

    def _ended(self, index: int, why: str) -> None:
        """Worker `index` ended: the row it was running is unknown."""
        row = self.tally.end(index, why)
        if row is not None:
            self._print(row)

    def _print(self, row: Row) -> None:
        self.printed += 1
        print_row(row, self.printed, self.total)

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
