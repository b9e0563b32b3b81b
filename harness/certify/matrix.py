"""The certification matrix: which fault scenarios a sink must pass, and which apply to it.

A sink's kind is observed, not declared: the baseline run (no fault) shows whether it writes in
transactions (`txn.*` points at the gate) or with plain produce requests (`produce`). Transaction
points then apply only to transactional sinks, `produce` points only to the others. So is a
pipeline's: state rows (faults where a batch's state is committed, under each state store provider)
apply when the baseline's checkpoint holds state.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.driver.state_stores import DEFAULT_STATE_STORE, STATE_STORES
from harness.faults.spec import PLAIN, TRANSACTIONAL

ANY = "any"


@dataclass(frozen=True)
class MatrixScenario:
    """One row of the matrix: a name (a test id), its fault specs, the sink kind it applies to."""

    name: str
    faults: tuple[str, ...]
    applies_to: str = ANY
    quick: bool = False  # in the smallest subset that still catches every known-bad sink
    stateful: bool = False  # only for pipelines that keep state
    state_store: str = DEFAULT_STATE_STORE
    live: bool = False  # input produced while the stream runs, at the live rate (others: a backlog)

    def applies(self, kind: str, stateful: bool = False) -> bool:
        return self.applies_to in (ANY, kind) and (stateful or not self.stateful)


def _matrix() -> list[MatrixScenario]:
    rows = [MatrixScenario("baseline", (), ANY, quick=True)]
    for point in ("txn.first_write", "txn.pre_commit", "txn.commit"):
        for target in ("sender", "executor", "driver"):
            quick = (target, point) in {("sender", "txn.commit"), ("driver", "txn.pre_commit")}
            # the first commit is a data commit in every sink; later ones may be a marker's
            nth = 1 if point == "txn.commit" else 2
            rows.append(MatrixScenario(f"kill-{target}-{point}", (f"kill:{target}@{point}#{nth}",), TRANSACTIONAL,
                                       quick))
    for target in ("sender", "executor", "driver"):
        rows.append(MatrixScenario(f"kill-{target}-produce", (f"kill:{target}@produce#3",), PLAIN,
                                   quick=target != "executor"))
    for target in ("executor", "driver"):
        rows.append(MatrixScenario(f"kill-{target}-batch.planned", (f"kill:{target}@batch.planned:2",)))
    for role in ("executors", "driver"):
        for point in ("txn.pre_commit", "txn.commit"):
            rows.append(MatrixScenario(f"partition-{role}-{point}", (f"partition:{role}@{point}#2/10s",),
                                       TRANSACTIONAL))
    rows += [
        # an EndTxn held longer than the commit call waits (60 s) and than the transaction timeout:
        # the commit fails, and the failure must not be ignored
        MatrixScenario("delay-endtxn-txn.pre_commit-long", ("delay:sender@txn.pre_commit#2/70s",), TRANSACTIONAL,
                       quick=True),
        # a zombie: the executor stops before its commit, Spark retries the task elsewhere (after
        # spark.network.timeout, 20 s), the zombie's commit goes out when it wakes
        MatrixScenario("pause-executor-txn.pre_commit", ("pause:executor@txn.pre_commit#2/40s",), TRANSACTIONAL,
                       quick=True),
        # a late EndTxn: past a short transaction timeout the broker has aborted the transaction
        MatrixScenario("delay-endtxn-txn.pre_commit", ("delay:sender@txn.pre_commit#2/25s",), TRANSACTIONAL,
                       quick=True),
        MatrixScenario("delay-endtxn-txn.commit", ("delay:sender@txn.commit#2/20s",), TRANSACTIONAL),
        # mid-stream for any sink (at time:15 a fast sink had already written everything: no effect)
        MatrixScenario("restart-broker", ("kill:broker@batch.planned:2",)),
        # live input, produced while the stream runs: the baseline and the kills that restart the query
        MatrixScenario("live-baseline", (), live=True),
        MatrixScenario("live-kill-driver-batch.planned", ("kill:driver@batch.planned:2",), live=True),
        MatrixScenario("live-kill-executor-batch.planned", ("kill:executor@batch.planned:2",), live=True),
    ]
    # a batch's state committed, its output not yet (or not wholly) written: the re-run must restore
    # the state of the batch before, under every provider
    for store in STATE_STORES:
        suffix = "" if store == DEFAULT_STATE_STORE else f"-{store}"
        for target in ("driver", "executor"):
            quick = (target, store) in {("driver", DEFAULT_STATE_STORE), ("executor", "rocksdb-changelog")}
            rows.append(MatrixScenario(f"kill-{target}-state.committed{suffix}", (f"kill:{target}@state.committed:3",),
                                       ANY, quick, stateful=True, state_store=store))
    return rows


MATRIX = _matrix()


def scenarios_for(kind: str, quick: bool, stateful: bool = False) -> list[MatrixScenario]:
    """The rows that apply to a sink of this kind and a pipeline with or without state (the baseline first)."""
    return [row for row in MATRIX if row.applies(kind, stateful) and (row.quick or not quick)]
