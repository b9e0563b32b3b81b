"""Whether a fault at `checkpoint.triggered:N` took effect while checkpoint N was in flight. Flink completes a
checkpoint in a few hundred milliseconds, and the harness sees its folder by polling: a fault that took effect
after the checkpoint's `_metadata` was written did not try what its class says (`point.missed`, so the row is
ineffective, harness.checker.judge), whatever the output shows. The checkpoint completed no later than the
watcher saw it complete (`batch.committed`), and no later than its `_metadata`'s time when the harness can read
it."""

from __future__ import annotations

from harness.faults.spec import CHECKPOINT_POINTS, parse_step
from harness.history import History, read_history
from harness.run.flink_checkpoints import FlinkCheckpoints

TRIGGERED = CHECKPOINT_POINTS[0]


def missed_in_flight(history: History, checkpoints: FlinkCheckpoints) -> list[str]:
    """Each `checkpoint.triggered` step whose first effect came after its checkpoint completed, recorded as
    `point.missed` (its checkpoint's completion and the effect's times, both the host's clock); their steps."""
    events = read_history(history.path, types=("trigger", "effect", "batch.committed"))
    missed = []
    for trigger in (e for e in events if e["type"] == "trigger" and e.get("point") == TRIGGERED):
        step = trigger["step"]
        effects = (e for e in events if e["type"] == "effect" and e.get("fault") == step and e["t"] >= trigger["t"])
        effect = next(effects, None)
        number = int(parse_step(step.removeprefix("then ")).number or 0)
        seen = [e["t"] for e in events if e["type"] == "batch.committed" and e.get("batch") == number]
        completed = min((t for t in (checkpoints.completed_at(number), *seen[:1]) if t is not None), default=None)
        if effect is None or completed is None or completed > effect["t"]:
            continue
        missed.append(step)
        history.record("point.missed", fault=step, checkpoint=number, completed=completed,
                       why=f"{step}: checkpoint {number} had completed {effect['t'] - completed:.3f} s before the "
                           "fault took effect, so it was not in flight")
    return missed
