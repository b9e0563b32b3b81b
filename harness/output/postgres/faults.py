"""The fault classes of PostgreSQL's own commit point, `pg.commit` (a commit on PostgreSQL's wire, read by
the gate: harness.gate.pg_proxy), added to a table sink's space (harness.faults.space)."""

from __future__ import annotations

from harness.cluster.spark import NETWORK_TIMEOUT_S
from harness.faults.space import PARTITION_S, ROLES, FaultClass, Observation, executors_write, role_suffix, who


def fault_classes(seen: Observation) -> list[FaultClass]:
    """A sink's commits on PostgreSQL's wire (`pg.commit`, the second one: the first batch's may be alone in
    being slow), by whichever roles sent them: the driver (foreachBatch) or the executors (df.write.jdbc).
    Cut before the server sees it, a commit is rolled back; its answer lost, it is committed while the
    sink gets an error; held, it lands late; its executor stopped, it lands after the task's retry's."""
    point = "pg.commit"
    if point not in seen.senders:
        return []
    out = []
    for role, spec, suffix in role_suffix(seen, point):
        out += [
            FaultClass("kill", "sender", point, role, "instant", f"kill-sender-{point}{suffix}",
                       (f"kill:sender@{point}#2{spec}",),
                       f"SIGKILL the process sending a commit ({who(role)}) while the gate holds it: PostgreSQL "
                       "rolls the transaction back, and the batch or task runs again", quick=True),
            FaultClass("drop", "sender", point, role, "instant", f"lost-pg-commit-response{suffix}",
                       (f"drop:sender@{point}#2{spec}",),
                       f"a commit whose answer is lost ({who(role)}): committed in PostgreSQL, the connection "
                       "closed in place of its answer; writing the batch again without checking what committed "
                       "duplicates it", quick=True),
        ]
    for link in sorted(seen.senders[point]) or ROLES:
        out.append(FaultClass("partition", link, point, "any", f"{PARTITION_S:g}s", f"partition-{link}-{point}",
                              (f"partition:{link}@{point}#2/{PARTITION_S:g}s",),
                              f"cut the {link} link to PostgreSQL for {PARTITION_S:g} s as a commit is sent: the "
                              "commit never reaches the server (rolled back), the connection is lost"))
    held = round(NETWORK_TIMEOUT_S / 2)
    out.append(FaultClass("delay", "sender", point, "any", "below-network-timeout", f"delay-{point}",
                          (f"delay:sender@{point}#2/{held}s",),
                          f"a commit held {held} s at the gate, then let through (within Spark's network timeout)"))
    if executors_write(seen, point):
        pause = round(2 * NETWORK_TIMEOUT_S)
        out.append(FaultClass("pause", "executor", point, "any", "above-network-timeout", f"pause-executor-{point}",
                              (f"pause:executor@{point}#2/{pause}s",),
                              f"a zombie: the executor stops as it sends a commit, past Spark's network timeout "
                              f"({NETWORK_TIMEOUT_S:g} s); the task runs again elsewhere and the zombie's commit "
                              "lands when it wakes", quick=True))
    return out
