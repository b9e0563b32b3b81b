"""The bookkeeping of a spread certification (`certify --workers N`): who the workers are, what they tell
the parent, which rows ran at once and which are settled. Pure: no processes, no Docker, so it is tested
on its own.

A worker runs one row at a time. A row is settled when its result came back, or when no worker will
ever run it: its worker ended while running it, or every worker ended. Such a row is `unknown`, never a pass.
A row that came back `ineffective` while others ran beside it on its engine is not settled: it runs again
alone, and that run counts (the first is kept as its `first_try`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.certify.matrix import MatrixScenario
from harness.certify.rows import Row
from harness.checker.judge import INEFFECTIVE
from harness.faults.space import Observation
from harness.report.folders import run_report_dir


@dataclass(frozen=True)
class Worker:
    """One worker process: its number, the engine (DOCKER_HOST) it runs on, its run (its cluster's labels
    and its report folder)."""

    index: int
    engine: str
    run_id: str

    @property
    def name(self) -> str:
        return f"w{self.index}"


@dataclass(frozen=True)
class Ready:
    """A worker's cluster is up: it can take rows."""

    worker: int


@dataclass(frozen=True)
class Took:
    """A worker was handed a row (at `at`, the epoch's seconds)."""

    worker: int
    row: MatrixScenario
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Finished:
    """A worker ran a row; with what that run showed of the sink and pipeline (the baseline's decides the plan)."""

    worker: int
    row: Row
    seen: Observation
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Failed:
    """A worker ended on an error (its cluster did not start, the sink is bad input): its last message."""

    worker: int
    status: int
    error: str


@dataclass
class Tally:
    """What each worker is running and what came back; rows link their reports from the certificate folder."""

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
