"""A campaign: `explore` across a matrix of sinks, outputs, stores and releases within one budget, every
failure written once to a findings index (harness.explore.findings).

A cell is one sink into one output on one store, on one release of Spark (and of the store's own, where
its line offers several: Iceberg's). Each cell gets its own cluster and a share of what is left of the
budget, so a cell that ends early leaves its time to the next. Shards split the cells as `certify --shard`
splits rows. The coverage store knows each cell's subject apart (harness.explore.explorer.subject_of names
its releases), so a second campaign runs what the first did not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import versions
from harness.certify.rows import MatrixRun, Row
from harness.checker.verdict import FAIL
from harness.errors import BadInput, HarnessError
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import BaselineFailed, explore
from harness.explore.findings import Finding, FindingsIndex
from harness.output.registry import NAMES, stores
from harness.output.registry import store as output_store
from harness.progress import say
from harness.report.folders import run_report_dir
from harness.run.session import checked_store, session
from harness.subject.code_spec import catalog, resolve_sink

MIN_CELL_S = 180.0  # a cluster, a baseline and one scenario: less and a cell tries nothing
TEARDOWN_S = 30.0  # a cluster's logs saved and its containers removed


@dataclass(frozen=True)
class Cell:
    """One sink into one output and store, on one release."""

    sink: str
    output: str
    store: str
    spark: str
    iceberg: str = ""  # an Iceberg release of Spark's line, for the iceberg output

    @property
    def name(self) -> str:
        where = f" on {self.store}" if output_store(self.output).table else ""
        release = f"Spark {self.spark}" + (f", Iceberg {self.iceberg}" if self.iceberg else "")
        return f"{self.sink} into {self.output}{where}, {release}"


@dataclass
class CellOutcome:
    """What one cell ran and found."""

    cell: Cell
    scenarios: int = 0
    failures: int = 0
    found: list[Finding] = field(default_factory=list)
    stopped: str | None = None  # why the cell could not run (its baseline, the engine)


def reference_sinks(output: str) -> list[str]:
    """The catalog's sinks that write `output` and are not known to be bad."""
    return [name for name in catalog("sink") if not name.startswith("bad_")
            and written_by(name) == output]


def written_by(sink: str) -> str:
    """The output a sink writes: its own (its OUTPUT), else the default output."""
    return resolve_sink(sink).output or NAMES[0]


def releases(output: str, where: str) -> list[versions.Stack]:
    """The releases `output` on `where` runs on here: each Spark line's, the default first, and each release of
    the store's own the line offers (`releases_on`: Iceberg's)."""
    kafka = versions.KAFKA_VERSIONS[0]
    found = []
    for spark in versions.SPARK_VERSIONS:
        for stack in output_store(output).releases_on(versions.Stack(kafka, spark)):
            try:  # the checks a run makes before its cluster starts
                checked_store(output, where, stack)
            except BadInput:
                continue
            if output_store(output).unsupported(stack) is None:
                found.append(stack)
    return found


def plan(outputs: list[str], where: list[str], sinks: list[str], per_output: int) -> list[Cell]:
    """The cells: for each output, each store of `where` it can live on, each sink (`sinks` that write it,
    else its reference sinks) on its first `per_output` releases. BadInput when nothing is left."""
    known = [s.name for s in stores()]
    for output in outputs:
        if output not in known:
            raise BadInput(f"--outputs: no output '{output}' (known: {', '.join(known)})")
    cells = []
    for output in outputs:
        chosen = [s for s in sinks if written_by(s) == output] if sinks else \
            reference_sinks(output)
        for place in where:
            for stack in releases(output, place)[:per_output]:
                cells += [Cell(sink, output, place, stack.spark, stack.iceberg_asked) for sink in chosen]
    if not cells:
        raise BadInput("the campaign has no cell: no sink given writes an output given, on a store given")
    return cells


def check_budget(cells: list[Cell], budget_s: float) -> None:
    """BadInput when `budget_s` gives a cell less than a cluster, a baseline and one scenario take."""
    if cells and budget_s / len(cells) < MIN_CELL_S:
        raise BadInput(f"a budget of {budget_s / 60:g} min gives each of {len(cells)} cells less than "
                       f"{MIN_CELL_S / 60:g} min (a cluster, a baseline and one scenario): give at least "
                       f"{len(cells) * MIN_CELL_S / 60:g} min, or fewer cells")


def run_campaign(cells: list[Cell], budget_s: float, base: MatrixRun, folder: Path) -> list[CellOutcome]:
    """Explore each cell in turn within its share of what is left of `budget_s`; failures go to the findings
    index in `folder`, every combination tried to the coverage store beside it."""
    check_budget(cells, budget_s)
    coverage, index = CoverageStore(folder), FindingsIndex(folder)
    ends = time.monotonic() + budget_s
    outcomes = []
    for n, cell in enumerate(cells):
        share = (ends - time.monotonic()) / (len(cells) - n)
        say(f"cell {n + 1}/{len(cells)}: {cell.name}, {share / 60:.1f} min")
        outcome = CellOutcome(cell)
        if share < MIN_CELL_S / 2:
            outcome.stopped = "no time left for it"
        else:
            try:
                _explore_cell(cell, share, replace(base, sink=cell.sink, output=cell.output, store=cell.store),
                              coverage, index, outcome)
            except HarnessError as error:  # bad input of one cell's (a release it cannot run), the engine's
                outcome.stopped = str(error).splitlines()[0][:300]
        outcomes.append(outcome)
        say(f"cell {n + 1}/{len(cells)}: " + described(outcome))
    index.write()
    return outcomes


def _explore_cell(cell: Cell, budget_s: float, run: MatrixRun, coverage: CoverageStore, index: FindingsIndex,
                  outcome: CellOutcome) -> None:
    started = time.monotonic()
    with session(spark=cell.spark, iceberg=cell.iceberg or None, output=cell.output, store=cell.store,
                 dependencies=run.dependencies) as opened:
        folder = run_report_dir(opened.cluster.run_id)
        left = budget_s - (time.monotonic() - started) - TEARDOWN_S  # its images and cluster took the rest
        try:
            found = explore(opened.cluster, run, left, coverage)
        except BaselineFailed as failed:
            outcome.stopped = f"its baseline did not pass: {failed}"
            if failed.row.outcome == FAIL:  # without a fault: a finding too
                outcome.failures += 1
                outcome.found += index.add(cell.sink, cell.output, cell.store, "no fault (the baseline)",
                                           scenario_folder(folder, failed.row))
            return
        outcome.scenarios = len(found.rows)
        for combination, row in found.failures:
            outcome.failures += 1
            outcome.found += index.add(cell.sink, cell.output, cell.store, combination.key,
                                       scenario_folder(folder, row))
        say(f"{cell.name}: {len(found.rows)} scenarios in {(time.monotonic() - started) / 60:.1f} min")


def scenario_folder(run_folder: Path, row: Row) -> Path:
    """A row's scenario folder: its report is the scenario's page (`<scenario>/index.html`) in the run's folder."""
    return (run_folder / row.report).parent


def described(outcome: CellOutcome) -> str:
    """One cell's outcome in a line."""
    if outcome.stopped and not outcome.found:
        return f"{outcome.cell.name}: stopped: {outcome.stopped}"
    new = ", ".join(f.kind for f in outcome.found) or "nothing new"
    return (f"{outcome.cell.name}: {outcome.scenarios} scenario{'s' if outcome.scenarios != 1 else ''}, "
            f"{outcome.failures} failed; new findings: {new}")
