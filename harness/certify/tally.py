"""The bookkeeping of a spread certification (`certify --workers N`): who the workers are, what they tell
the parent, and which rows are settled. Pure: no processes, no Docker, so it is tested on its own.

A worker runs one row at a time. A row is settled when its result came back, or when no worker will
ever run it: its worker ended while running it, or every worker ended. Such a row is `unknown`, never a pass.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.certify.matrix import MatrixScenario
from harness.certify.rows import Row
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
class Took:
    """A worker took a row from the queue."""

    worker: int
    row: MatrixScenario


@dataclass(frozen=True)
class Finished:
    """A worker ran a row; with what that run showed of the sink and pipeline (the baseline's decides the plan)."""

    worker: int
    row: Row
    seen: Observation


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

    def took(self, message: Took) -> None:
        self.running[message.worker] = message.row

    def finished(self, message: Finished) -> Row:
        """The row as the certificate has it: with its worker, its engine, its report's link."""
        worker = self.workers[message.worker]
        self.running.pop(message.worker, None)
        row = replace(message.row, worker=worker.name, engine=worker.engine,
                      report=self._link(worker, message.row.report))
        self.done[row.scenario.name] = row
        self.shown[row.scenario.name] = message.seen
        return row

    def end(self, index: int, why: str) -> Row | None:
        """Worker `index` ended; the row it was running, if any, is unknown."""
        self.ended.add(index)
        scenario = self.running.pop(index, None)
        if scenario is None:
            return None
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
