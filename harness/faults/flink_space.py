"""A Flink job's fault space: a Spark sink's of the same kind (harness.faults.space) without the classes only
Spark has, its batch points written as Flink's checkpoint points, and the classes a checkpoint adds: the
JobManager or a TaskManager killed or cut off while a checkpoint is in flight and as it completes, and a
recovery slower than the transaction timeout (the pitfall Flink's Kafka sink documents).

No class kills at `checkpoint.triggered`: a checkpoint of these jobs completes within about 0.1 to 0.2 s of its
folder appearing, and a kill takes effect 0.3 to 0.6 s after its point (the engine's SIGKILL, then the process
seen gone), so it never lands while the checkpoint is in flight (harness.run.checkpoint_window). A cut link lands
in flight about one time in two (`later`), so the JobManager and a TaskManager are cut off there; the kills are
at `checkpoint.completed`, and Spark's kill of the controller at a planned batch is Flink's at a completed
checkpoint."""

from __future__ import annotations

from dataclasses import replace

from harness.cluster.flink import HEARTBEAT_TIMEOUT_S
from harness.faults.fault_class import FaultClass, Observation, just_above, spark_only
from harness.faults.spec import CHECKPOINT_POINTS, FIRES_ON, TRANSACTIONAL

TRIGGERED, COMPLETED = CHECKPOINT_POINTS
ISOLATED_S = round(3 * HEARTBEAT_TIMEOUT_S)  # cut off past the heartbeat timeout: Flink takes it for lost
NAMES = {FIRES_ON[TRIGGERED]: TRIGGERED}  # a batch point a Flink class names by its checkpoint's
KILLED_AT = {FIRES_ON[TRIGGERED]: COMPLETED}  # a kill lands after its checkpoint completed (see above)
WORDS = {"batch 2 is planned": "checkpoint 2 is {}", ": the batch re-runs": ""}
AS = {TRIGGERED: "triggered", COMPLETED: "completed"}
LATER_CHECKPOINTS = (3, 4)  # the checkpoints a cut at a trigger tries after the 2nd's (`later`)


def flink_space(classes: list[FaultClass], seen: Observation) -> list[FaultClass]:
    """The classes of `classes` (a Spark sink's space) a Flink job has, named as Flink's, then its own."""
    own = checkpoint_classes(seen)
    taken = {fault.row for fault in own}
    flink = (as_flink(fault) for fault in classes if not spark_only(fault))
    return [*(fault for fault in flink if fault.row not in taken), *own]


def as_flink(fault: FaultClass) -> FaultClass:
    """A class at a batch point, written at the checkpoint point it fires on for a Flink job (a kill's, at the
    completed checkpoint's)."""
    point = (KILLED_AT if fault.action == "kill" else NAMES).get(fault.point)
    if point is None:
        return fault
    what = fault.what
    for spark, flink in WORDS.items():
        what = what.replace(spark, flink.format(AS[point]))
    return replace(fault, point=point, row=fault.row.replace(fault.point, point), what=what,
                   faults=tuple(step.replace(f"@{fault.point}", f"@{point}") for step in fault.faults))


def later(fault: str) -> tuple[tuple[str, ...], ...]:
    """A cut at a later checkpoint's trigger, each tried in turn while the one before landed after its
    checkpoint completed: a cut takes effect 0.08 to 0.12 s after its point, about as long as a checkpoint
    takes, so one in two lands in flight."""
    return tuple((f"{fault}@{TRIGGERED}:{n}/{ISOLATED_S}s",) for n in LATER_CHECKPOINTS)


def checkpoint_classes(seen: Observation) -> list[FaultClass]:
    """Each role of Flink's killed or cut off at a checkpoint's two points; a slow recovery, for a job that
    commits Kafka transactions."""
    out = [
        FaultClass("kill", "driver", COMPLETED, "any", "instant", f"kill-driver-{COMPLETED}",
                   (f"kill:driver@{COMPLETED}:2",),
                   "SIGKILL the JobManager as checkpoint 2 completes, its transactions' commit not yet asked or "
                   "asked: the replaced JobManager restores the job from it, whose committers commit them"),
        FaultClass("kill", "executor", COMPLETED, "any", "instant", f"kill-executor-{COMPLETED}",
                   (f"kill:executor@{COMPLETED}:2",),
                   "SIGKILL a TaskManager running the job as checkpoint 2 completes: its tasks restore from it "
                   "elsewhere"),
        FaultClass("isolate", "driver", TRIGGERED, "any", "above-heartbeat-timeout", f"isolate-driver-{TRIGGERED}",
                   (f"isolate:driver@{TRIGGERED}:2/{ISOLATED_S}s",),
                   f"the JobManager cut off the network for {ISOLATED_S} s while checkpoint 2 is in flight, past "
                   f"Flink's heartbeat timeout ({HEARTBEAT_TIMEOUT_S:g} s): the TaskManagers lose it, the "
                   "checkpoint never completes, the job restarts from the one before when it is back",
                   ways=later("isolate:driver")),
        FaultClass("isolate", "executor", TRIGGERED, "any", "above-heartbeat-timeout",
                   f"isolate-executor-{TRIGGERED}", (f"isolate:executor@{TRIGGERED}:2/{ISOLATED_S}s",),
                   f"a TaskManager running the job cut off the network for {ISOLATED_S} s while checkpoint 2 is in "
                   "flight: the checkpoint never completes, its tasks restart elsewhere from the one before",
                   ways=later("isolate:executor")),
        FaultClass("isolate", "executor", COMPLETED, "any", "above-heartbeat-timeout",
                   f"isolate-executor-{COMPLETED}", (f"isolate:executor@{COMPLETED}:2/{ISOLATED_S}s",),
                   f"a TaskManager running the job cut off the network for {ISOLATED_S} s as checkpoint 2 completes: "
                   "its tasks restart elsewhere and commit what it had pre-committed, then it comes back"),
    ]
    if seen.kind == TRANSACTIONAL and "txn.pre_commit" in seen.senders:
        held = just_above(seen.timeout_s)
        out.append(FaultClass(  # held at txn.pre_commit: the broker has not seen the commit (at txn.commit it has)
            "kill", "sender", "txn.pre_commit", "any", "above-txn-timeout", "slow-recovery-txn.pre_commit",
            ("kill:sender@txn.pre_commit#2", f"then delay:sender@txn.pre_commit/{held}s"),
            "the TaskManager asking for a commit killed before the broker saw it, and the restored job's "
            f"commit of it held {held} s on its way, past the transaction timeout ({seen.timeout_s:g} s), as a "
            "recovery slower than the timeout sends it: the broker has aborted the transaction (Flink's "
            "documented pitfall)"))
    return out
