"""The certification matrix: one row for each class of the fault space (harness.faults.space), after a
fault-free baseline that shows the space.

A sink's kind is observed, not declared: the baseline shows whether it writes in transactions (`txn.*`
points at the gate) or with plain produce requests (`produce`), which role sends them, and the sink's
transaction timeout; a pipeline's state rows apply when the baseline's checkpoint holds state. `MATRIX`
is every row any sink or pipeline can get (the dry run's list and the suites' catalog of rows).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.driver.state_stores import DEFAULT_STATE_STORE
from harness.faults.space import MIN_BROKERS, ROLES, FaultClass, Observation, space
from harness.faults.spec import PLAIN, TABLE, TRANSACTIONAL
from harness.output.registry import table_stores
from harness.settings import FLINK

ANY = "any"


@dataclass(frozen=True)
class MatrixScenario:
    """One row of the matrix: a name (a test id), its fault specs, the sink kind it applies to."""

    name: str
    faults: tuple[str, ...]
    applies_to: str = ANY
    quick: bool = False  # in the covering subset a quick certification tries
    stateful: bool = False  # only for pipelines that keep state
    state_store: str = DEFAULT_STATE_STORE
    live: bool = False  # input produced while the stream runs, at the live rate (others: a backlog)
    speculation: bool = False  # spark.speculation on: two attempts of a task may write at once
    classes: tuple[str, ...] = ()  # the fault classes it tries
    brokers: int = 1  # the Kafka brokers it needs (--brokers)
    ways: tuple[tuple[str, ...], ...] = ()  # other faults that try its class, in turn, when `faults` is ineffective

    def applies(self, kind: str, stateful: bool = False) -> bool:
        return self.applies_to in (ANY, kind) and (stateful or not self.stateful)


BASELINE = MatrixScenario("baseline", (), ANY, quick=True)


def row_of(fault: FaultClass, applies_to: str) -> MatrixScenario:
    """The row that tries one fault class."""
    return MatrixScenario(fault.row, fault.faults, applies_to, fault.quick, fault.point == "state.committed",
                          fault.state_store, fault.live, fault.speculation, (fault.name,), fault.brokers, fault.ways)


def rows_for(seen: Observation, quick: bool) -> list[MatrixScenario]:
    """The rows after the baseline for what it showed: one per applicable class (the quick subset's)."""
    return [row_of(fault, seen.kind) for fault in space(seen) if fault.tried and (fault.quick or not quick)]


def table_rows(output: str, where: str, brokers: int) -> list[MatrixScenario]:
    """Every row a table sink into `output` on `where` (the `store` setting) can get, its commit points as its
    store assumes them: the plan a dry run prints and `pytest --sink` lists before any baseline."""
    return rows_for(Observation.assumed(TABLE, True, brokers, output, where), quick=False)


def _assumed(brokers: int = 1) -> list[Observation]:
    """A sink of every kind with a stateful pipeline, as a dry run assumes it: table sinks of every table output."""
    return [*(Observation.assumed(kind, stateful=True, brokers=brokers) for kind in (TRANSACTIONAL, PLAIN)),
            *(Observation.assumed(TABLE, stateful=True, brokers=brokers, output=table.name)
              for table in table_stores())]


def _matrix(brokers: int = 1) -> list[MatrixScenario]:
    """Every row on `brokers` brokers: those of every kind of sink with a stateful pipeline, each once."""
    return _merged(_assumed(brokers))


def flink_matrix(brokers: int = 1) -> list[MatrixScenario]:
    """Every row a Flink job can get on `brokers` brokers (harness.faults.flink_space): a transactional job's and
    a plain one's, each once."""
    return _merged([replace(Observation.assumed(kind, stateful=False, brokers=brokers), engine=FLINK)
                    for kind in (TRANSACTIONAL, PLAIN)])


def _merged(observations: list[Observation]) -> list[MatrixScenario]:
    """The baseline and the rows of each observation, each once: a row two kinds share applies to any sink."""
    rows: dict[str, MatrixScenario] = {BASELINE.name: BASELINE}
    for seen in observations:
        for row in rows_for(seen, quick=False):
            shared = rows.get(row.name)
            rows[row.name] = row if shared is None or shared.applies_to == row.applies_to else replace(row,
                                                                                                     applies_to=ANY)
    return list(rows.values())


MATRIX = _matrix()
BROKER_MATRIX = [row for row in _matrix(MIN_BROKERS) if row.brokers > 1]  # the rows only several brokers get


def _split_by_role() -> list[MatrixScenario]:
    """The rows a sink gets whose driver and executors both send its points: a class each role (a
    fault at the driver's commit is another class than at an executor's). Not in `MATRIX`, whose rows
    a sink of unknown senders gets; listed for test ids, which are fixed before any baseline runs."""
    known = {row.name for row in MATRIX}
    rows: dict[str, MatrixScenario] = {}
    for assumed in _assumed():
        both = replace(assumed, senders={point: frozenset(ROLES) for point in assumed.senders})
        rows.update((row.name, row) for row in rows_for(both, quick=False) if row.name not in known)
    return list(rows.values())


SPLIT_BY_ROLE = _split_by_role()


def scenarios_for(kind: str, quick: bool, stateful: bool = False, brokers: int = 1) -> list[MatrixScenario]:
    """The rows that apply to a sink of this kind and a pipeline with or without state, on `brokers` brokers
    (the baseline first)."""
    rows = MATRIX + (BROKER_MATRIX if brokers >= MIN_BROKERS else [])
    return [row for row in rows if row.applies(kind, stateful) and (row.quick or not quick)]
