"""Which row a free cluster runs next when a matrix is spread over several (harness.certify.scheduler). Pure:
no processes, no Docker, so the plan is tested on its own.

A row's time is mostly a wait when its fault holds a request, pauses a container or cuts a link for
longer than a batch takes: the cluster idles through it, so such rows run beside rows that work. The
expected time of a row is the baseline's plus what its faults hold (known from the fault spec) plus a
driver restart; rows go longest first, so that the longest wait never starts last. Clusters on one machine
share its cores: a row's work (not its waits) takes longer by as much as the clusters together ask more
than the machine has (`load`: the share of the engine's cores one cluster's work takes, measured by
harness.certify.room), so that a cluster is started only where its rows finish sooner. Live rows (input
produced at a rate while the stream runs) run alone when the clusters share a machine: a second
cluster's work could starve the stream's batches and leave the row ineffective. A row judged
`ineffective` while another ran beside it is run again alone before it counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.certify.matrix import MatrixScenario
from harness.faults.spec import parse_schedule

HELD_ACTIONS = ("delay", "pause", "partition", "isolate")  # a fault whose duration the cluster waits through
RESTART_S = 20.0  # a killed or stopped driver: spark-submit again, the query from its checkpoint
# another cluster is worth starting when it cuts the expected time by a fifth or more: the plan is optimistic (a
# row's recovery works too, a cluster's start takes the cores), and on 2 cores whose cluster's work took 0.9 of
# them, a third cluster the plan promised a tenth from ran the quick matrix in 4 min 32 s against two's 3 min 35 s
GAIN = 0.8


def held_s(row: MatrixScenario) -> float:
    """Seconds the row's faults hold a request, pause a container or cut a link."""
    return sum(step.duration or 0.0 for step in parse_schedule(list(row.faults)) if step.action in HELD_ACTIONS)


def work_s(row: MatrixScenario, base_s: float) -> float:
    """The row's expected work: a fault-free run's (`base_s`) and a driver's restart."""
    restarts = sum(step.action in ("kill", "stop") and step.target == "driver"
                   for step in parse_schedule(list(row.faults)))
    return base_s + RESTART_S * restarts


def expected_s(row: MatrixScenario, base_s: float) -> float:
    """The row's expected time alone: its work and its holds."""
    return work_s(row, base_s) + held_s(row)


def slowdown(clusters: int, load: float) -> float:
    """How much longer a row's work takes with `clusters` at work on a machine one cluster's work takes
    `load` of (0: not known, or clusters on machines of their own)."""
    return max(1.0, clusters * load)


def longest_first(rows: Iterable[MatrixScenario], base_s: float) -> list[MatrixScenario]:
    """The rows by expected time, longest first (the plan's order among equals)."""
    return sorted(rows, key=lambda row: -expected_s(row, base_s))


@dataclass(frozen=True)
class Lanes:
    """How rows share the clusters: `shared` when they run on one machine (one engine), so that a row that
    must run alone has it alone."""

    shared: bool

    def alone(self, row: MatrixScenario, rerun: frozenset[str] = frozenset()) -> bool:
        """Whether `row` must have the machine to itself: a live row, or one run again alone."""
        return self.shared and (row.live or row.name in rerun)

    def next_row(self, pending: Sequence[MatrixScenario], running: Sequence[MatrixScenario],
                 rerun: frozenset[str] = frozenset()) -> MatrixScenario | None:
        """The row a free cluster takes (`pending` longest first), or None: wait for one to finish. Nothing
        goes beside a row that must run alone; such a row waits for the others to finish."""
        if any(self.alone(row, rerun) for row in running):
            return None
        for row in pending:
            if not self.alone(row, rerun) or not running:
                return row
        return None

    def plan(self, rows: Sequence[MatrixScenario], base_s: float, most: int) -> Plan:
        """The rows after the baseline as the loop hands them out (longest first, the baseline's `base_s`
        known), and how many of up to `most` clusters they are worth."""
        return Plan(tuple(longest_first(rows, base_s)), base_s, self, most)


@dataclass(frozen=True)
class Plan:
    """The rows in the order they go, and what they are worth in clusters once the cores one cluster's work
    takes are measured (`clusters`)."""

    rows: tuple[MatrixScenario, ...]
    base_s: float
    lanes: Lanes
    most: int

    def clusters(self, load: float = 0.0) -> int:
        """`clusters_worth` these rows, one cluster's work taking `load` of the machine."""
        return clusters_worth(self.rows, self.base_s, self.lanes, self.most, load)


def makespan(rows: Sequence[MatrixScenario], clusters: int, base_s: float, lanes: Lanes, load: float = 0.0) -> float:
    """The expected time of `rows` over `clusters` taken in plan order (`next_row`), each cluster free at
    once, each row's work slowed as `clusters` share the machine (`slowdown`): what a plan promises, for the
    dry run and the tests."""
    slow = slowdown(clusters, load) if lanes.shared else 1.0
    pending = longest_first(rows, base_s)
    free = [0.0] * clusters
    running: list[tuple[float, MatrixScenario]] = []  # (end, row)
    now = 0.0
    while pending:
        running = [(end, row) for end, row in running if end > now]
        idle = [i for i, t in enumerate(free) if t <= now]
        row = lanes.next_row(pending, [r for _, r in running]) if idle else None
        if row is None:
            now = min([end for end, _ in running] + [t for t in free if t > now])
            continue
        pending.remove(row)
        free[idle[0]] = now + work_s(row, base_s) * slow + held_s(row)
        running.append((free[idle[0]], row))
    return max(free)


def clusters_worth(rows: Sequence[MatrixScenario], base_s: float, lanes: Lanes, most: int, load: float = 0.0) -> int:
    """The fewest clusters (up to `most`) whose expected time is within `GAIN` of the best: one more
    cluster only where its rows' waits shorten the plan more than sharing the cores lengthens it (`load`)."""
    spans = [makespan(rows, n, base_s, lanes, load) for n in range(1, most + 1)]
    return next(n for n, span in enumerate(spans, start=1) if span <= min(spans) / GAIN)
