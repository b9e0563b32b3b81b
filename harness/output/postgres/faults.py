"""The fault classes of PostgreSQL's own commit point, `pg.commit` (a commit on PostgreSQL's wire, read by
the gate: harness.gate.pg_proxy), added to a table sink's space (harness.faults.space)."""

from __future__ import annotations

from harness.cluster.spark import NETWORK_TIMEOUT_S
from harness.faults.service_commits import service_commit_classes
from harness.faults.space import FaultClass, Observation, executors_write


def fault_classes(seen: Observation) -> list[FaultClass]:
    """A sink's commits on PostgreSQL's wire (`pg.commit`, the second one: the first batch's may be alone in
    being slow), by whichever roles sent them: the driver (foreachBatch) or the executors (df.write.jdbc).
    Cut before the server sees it, a commit is rolled back; its answer lost, it is committed while the
    sink gets an error; held, it lands late; its executor stopped, it lands after the task's retry's."""
    point = "pg.commit"
    out = service_commit_classes(
        seen, point, server="PostgreSQL", commit="a commit", lost_row="lost-pg-commit-response",
        killed="PostgreSQL rolls the transaction back, and the batch or task runs again",
        lost="committed in PostgreSQL, the connection closed in place of its answer; writing the batch again "
             "without checking what committed duplicates it",
        cut=": the commit never reaches the server (rolled back), the connection is lost",
        held=" (within Spark's network timeout)")
    if executors_write(seen, point):
        pause = round(2 * NETWORK_TIMEOUT_S)
        out.append(FaultClass("pause", "executor", point, "any", "above-network-timeout", f"pause-executor-{point}",
                              (f"pause:executor@{point}#2/{pause}s",),
                              f"a zombie: the executor stops as it sends a commit, past Spark's network timeout "
                              f"({NETWORK_TIMEOUT_S:g} s); the task runs again elsewhere and the zombie's commit "
                              "lands when it wakes", quick=True))
    return out
