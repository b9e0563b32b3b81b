"""`certify --workers N` (and `--quick`'s default): the matrix of one sink spread over worker processes
(harness.certify.worker), each with its own cluster on its own engine (`--docker-hosts`: worker i on
host i modulo their number). The whole schedule is here, its data in `Scheduler` and `Tally`; `Scheduler.run`
reads from start to end:

- the baseline first, as it decides the rows that follow; the other workers start their clusters meanwhile.
  With `sizing` (the default on one engine, harness.certify.room) one or two start with it, and once
  the baseline's cluster is measured, as many more as the plan is worth with the engine's cores shared and
  as its memory holds;
- then the loop: each free worker whose cluster is up takes the next row (harness.certify.lanes: longest
  first, a row that must run alone alone), so a slow row holds up no other; what the workers send back goes
  into the tally, and each row is printed as it settles;
- then None to every worker: no more rows, remove your cluster.

A worker runs one row at a time. A row is settled when its result came back, or when no worker will ever
run it: its worker ended while running it, or every worker ended. Such a row is `unknown`, never a pass. A
row that came back `ineffective` while others ran beside it on its engine is not settled: it runs again
alone, and that run counts (the first is kept as its `first_try`). The rows make one certificate (saying
which rows ran at once) and one run index.

Nothing is left running: a Ctrl-C or SIGTERM of this process (a KeyboardInterrupt here) sends SIGTERM
to every worker, then waits while each removes its cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Protocol

from harness.certify.lanes import Lanes
from harness.certify.matrix import BASELINE, MatrixScenario
from harness.certify.rows import Row, plan_after_baseline, print_row
from harness.certify.shards import Shard, shard_of
from harness.certify.worker import Failed, Finished, Job, Ready, Worker, serve
from harness.checker.judge import INEFFECTIVE
from harness.cluster.engine import docker_hosts as parse_docker_hosts
from harness.cluster.labels import new_run_id
from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.faults.space import Observation
from harness.progress import say
from harness.report import write_index
from harness.report.folders import certificate_dir, run_report_dir
from harness.subject.code_spec import CodeSpec

POLL_SECONDS = 1.0  # how often a quiet parent looks for workers that ended
MOST_CLUSTERS = 3  # the default's most clusters on one engine (the plan and the memory may want fewer)


class Sizer(Protocol):
    """How many clusters to run on one engine (harness.certify.room.Sizing, measured; a stand-in in the tests).
    What it says here is all the schedule needs of it."""

    notes: list[str]  # how it decided, for the console and the certificate

    def at_start(self, run_ids: Sequence[str]) -> int:
        """Clusters to start with the baseline, the first of the workers' (`run_ids`, in order); those are
        sampled until the baseline has run (it runs on whichever is ready first)."""

    def after_baseline(self, run_id: str, running: int, wanted: Callable[[float], int]) -> int:
        """Clusters for the rows, at least those `running`: as many as the plan is worth (`wanted`, given the
        share of the engine the work of the baseline's cluster, `run_id`, took) and as the memory holds."""


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
    scheduler = Scheduler(job, workers, (out or certificate_dir(run_id)).resolve(), Lanes(len(set(engines)) == 1),
                          sizing)
    try:
        seen, rows = scheduler.run(sink, quick, shard)
    except BaseException:
        scheduler.stop(cut_short=True)
        raise
    else:
        scheduler.stop(cut_short=False)
    finally:
        write_index(run_report_dir(run_id), [run_report_dir(workers[i].run_id) for i in scheduler.started])
    return scheduler.tally.folder, seen, rows


class Scheduler:
    """The worker processes, a queue of rows for each and the queue their messages come back on; which of them
    run and are ready, the rows not handed out yet, and the tally of what came back."""

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
        self.planned: dict[str, MatrixScenario] = {}  # the rows after the baseline, as planned (their ways too)
        self.printed = 0
        self.total: int | None = None  # rows to print: unknown until the baseline decided the plan

    def run(self, sink: CodeSpec, quick: bool, shard: Shard | None = None) -> tuple[Observation, list[Row]]:
        """The baseline, then the rows it calls for (the shard's share of them); returns what the baseline
        showed and every row in plan order."""
        self.pending = [BASELINE]  # the only row at first: it decides the rest; the other clusters start meanwhile
        run_ids = [worker.run_id for worker in self.tally.workers]
        self._start(self.sizing.at_start(run_ids) if self.sizing else len(self.processes))
        self._until_settled([BASELINE])
        seen = self.tally.observed(BASELINE)
        plan = shard_of(shard, plan_after_baseline(sink.spec, seen, quick))
        ran = self.tally.done.get(BASELINE.name)
        ordered = self.lanes.plan(plan, ran.seconds if ran else 0.0, len(self.processes))
        if self.sizing and ran and ran.worker and plan:  # its cluster is measured: how many clusters the rows get
            measured = next(worker.run_id for worker in self.tally.workers if worker.name == ran.worker)
            self._start(self.sizing.after_baseline(measured, len(self.started), ordered.clusters))
            for line in self.sizing.notes:
                say(f"clusters {line}")
        self.pending, self.total = list(ordered.rows), len(plan) + 1  # the loop hands them out in turn
        self.planned = {row.name: row for row in plan}
        self._until_settled(plan)
        for index in self.started:  # None: no more rows, remove your cluster
            self.tasks[index].put(None)
        rows = self.tally.rows([BASELINE, *plan])
        for row in rows:
            if row.worker is None:  # never taken: every worker had ended
                self._print(row)
        return seen, rows

    def _start(self, count: int) -> None:
        """Start workers until `count` run (each starts its cluster, then says it is ready)."""
        for index in range(len(self.started), min(count, len(self.processes))):
            self.processes[index].start()
            self.started.append(index)

    def _until_settled(self, rows: list[MatrixScenario]) -> None:
        """The loop: rows handed out, then the next message (a quiet second: the workers that ended), until
        every row of `rows` is settled or every worker started has ended."""
        while not self.tally.settled(rows) and len(self.tally.ended) < len(self.started):
            self._hand_out()
            try:
                self._receive(self.results.get(timeout=POLL_SECONDS))
            except queue.Empty:
                self._reap()

    def _hand_out(self) -> None:
        """Hand each free worker whose cluster is up the next row the lanes allow."""
        for index in sorted(self.ready - set(self.tally.running) - self.tally.ended):
            row = self.lanes.next_row(self.pending, list(self.tally.running.values()), frozenset(self.alone))
            if row is None:
                return
            self.pending.remove(row)
            self.tally.took(Took(index, row))
            self.tasks[index].put(row)

    def _receive(self, message: Ready | Finished | Failed) -> None:
        """A worker's message: its cluster is up; a row came back (printed, or to run again alone); it failed."""
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
                self._receive(self.results.get_nowait())
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


@dataclass(frozen=True)
class Took:
    """A worker was handed a row (at `at`, the epoch's seconds)."""

    worker: int
    row: MatrixScenario
    at: float = field(default_factory=time.time)


@dataclass
class Tally:
    """What each worker is running and what came back; rows link their reports from the certificate folder.
    Pure (no processes, no Docker), so it is tested on its own."""

    workers: list[Worker]
    folder: Path
    running: dict[int, MatrixScenario] = field(default_factory=dict)
    done: dict[str, Row] = field(default_factory=dict)
    shown: dict[str, Observation] = field(default_factory=dict)  # row -> what its run showed
    ended: set[int] = field(default_factory=set)
    started: float = field(default_factory=time.time)  # the matrix's start: rows' times are counted from it
    spans: list[tuple[str, int, float, float | None]] = field(default_factory=list)  # row, worker, from, to
    first_tries: dict[str, dict] = field(default_factory=dict)  # row -> its ineffective run beside others

    def took(self, message: Took) -> None:
        self.running[message.worker] = message.row
        self.spans.append((message.row.name, message.worker, message.at, None))

    def finished(self, message: Finished) -> Row:
        """The row as the certificate has it: with its worker, its engine, its report's link, when it started and
        the rows beside it. Not yet settled when it is to run again alone (`again`)."""
        worker = self.workers[message.worker]
        self.running.pop(message.worker, None)
        name = message.row.scenario.name
        began = self._close(name, message.worker, message.at)
        beside = self.beside(name, message.worker, began, message.at)
        row = replace(message.row, worker=worker.name, engine=worker.engine,
                      report=self._link(worker, message.row.report), started_s=round(began - self.started, 1),
                      beside=beside or None, first_try=self.first_tries.get(name))
        crowded = self.beside(name, message.worker, began, message.at, engine=worker.engine)  # its machine's
        if row.outcome == INEFFECTIVE and crowded and name not in self.first_tries:
            self.first_tries[name] = {"outcome": row.outcome, "why": row.error, "beside": beside,
                                      "worker": worker.name, "report": row.report}
        else:
            self.done[name] = row
            self.shown[name] = message.seen
        return row

    def again(self, row: Row) -> bool:
        """Whether a finished row is to run again alone (ineffective beside others, the first time)."""
        return row.scenario.name not in self.done

    def beside(self, name: str, worker: int, began: float, ended: float, engine: str | None = None) -> list[str]:
        """The rows that ran on other workers (on `engine`'s, if given) while row `name` ran on `worker` from
        `began` to `ended`."""
        return [other for other, by, start, end in self.spans
                if by != worker and start < ended and (end is None or end > began) and other != name
                and engine in (None, self.workers[by].engine)]

    def _close(self, name: str, worker: int, at: float) -> float:
        """End the row's open span; its start (`at` itself when the row was never handed out here)."""
        for i, (other, by, start, end) in enumerate(self.spans):
            if (other, by, end) == (name, worker, None):
                self.spans[i] = (other, by, start, at)
                return start
        return at

    def end(self, index: int, why: str) -> Row | None:
        """Worker `index` ended; the row it was running, if any, is unknown."""
        self.ended.add(index)
        scenario = self.running.pop(index, None)
        if scenario is None:
            return None
        self._close(scenario.name, index, time.time())
        worker = self.workers[index]
        row = Row(scenario, "unknown", {}, 0.0, self._link(worker, f"{scenario.name}/index.html"),
                  f"worker {worker.name} on {worker.engine} {why} while running it", worker=worker.name,
                  engine=worker.engine)
        self.done[scenario.name] = row
        return row

    def settled(self, rows: list[MatrixScenario]) -> bool:
        return all(row.name in self.done for row in rows) or len(self.ended) == len(self.workers)

    def observed(self, baseline: MatrixScenario) -> Observation:
        """What the baseline showed (nothing, when no worker ran it)."""
        return self.shown.get(baseline.name, Observation())

    def rows(self, plan: list[MatrixScenario]) -> list[Row]:
        """Every row of the plan in its order; one that no worker ran is unknown."""
        return [self.done.get(row.name) or Row(row, "unknown", {}, 0.0, "", "no worker was left to run it")
                for row in plan]

    def _link(self, worker: Worker, report: str) -> str:
        """A report in the worker's run folder, linked from the certificate folder."""
        return os.path.relpath(run_report_dir(worker.run_id) / report, self.folder)
