"""Waiting until a scenario's input is consumed: by progress, never by a fixed deadline.

Progress is input consumed, a batch planned, a fault fired or a driver restarted; a run that goes
`stall_timeout` s without any once its stream planned a batch (before that, while the driver starts, at
least FIRST_BATCH_SECONDS) is `incomplete`, with the progress it made. A query that fails on its own
is restarted by the supervisor; one that cannot go on ends the wait with the supervisor's anomaly.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.errors import InfrastructureError
from harness.faults.schedule import Schedule
from harness.history import History
from harness.progress import say
from harness.run.checkpoint import CheckpointFolder
from harness.run.driver_supervisor import DriverSupervisor

SETTLE_SECONDS = 4.0  # quiet after the last batch before a stateful query counts as done (triggers are 1 s)
FIRST_BATCH_SECONDS = 300.0  # a driver's start to its first batch took up to 53 s beside other clusters
QUIET_REPORT_SECONDS = 25.0  # with no progress, a progress line every 5 + 25 s


class ConsumptionWait:
    """Follows the checkpoint's offsets against the input's end offsets."""

    def __init__(self, name: str, folder: CheckpointFolder, topic: str, target: Callable[[], dict[int, int] | None],
                 schedule: Schedule, supervisor: DriverSupervisor, stall_timeout: float, history: History,
                 broken: Callable[[], str | None] = lambda: None) -> None:
        """`target`: the input's end offsets, or None while live input is still being produced; `broken`:
        why the harness itself can no longer run the scenario (its gate lost the relay), else None."""
        self.name = name
        self.folder = folder
        self.topic = topic
        self.target = target
        self.schedule = schedule
        self.supervisor = supervisor
        self.stall_timeout = stall_timeout
        self.history = history
        self.broken = broken

    def run(self) -> dict | None:
        """Phase 1: until the input is consumed and every fault fired (or the input ran out first).
        Phase 2: wait for faults in progress, heal everything, and wait until the input is consumed.

        Returns None when it was, or why not (`incomplete`, with the progress made).
        """
        reason = self._wait(lambda: self.schedule.all_fired, final=False)
        if reason is None:
            self.schedule.close()
            self.schedule.nemesis.heal_all()
            reason = self._wait(lambda: True, final=True)
        if reason is not None:
            self.history.record("incomplete", **reason)
        return reason

    def _wait(self, faults_done: Callable[[], bool], final: bool) -> dict | None:
        folder, schedule, restarting = self.folder, self.schedule, self.supervisor.restarting
        started = moved = batches_moved = time.monotonic()
        last_seen: tuple[int, ...] = ()
        last_batches = (0, 0)
        next_report = 0.0
        last_said: tuple | None = None
        while True:
            if (why := self.broken()) is not None:  # the harness's own failure: exit 3, never a verdict
                raise InfrastructureError(f"{self.name}: {why}")
            now = time.monotonic()
            listing = folder.listing()  # one round trip to the relay for every question below
            consumed = folder.consumed(self.topic, listing=listing)
            target = self.target()
            done = sum(min(consumed.get(p, 0), end) for p, end in target.items()) if target else sum(consumed.values())
            total = sum(target.values()) if target else "?"
            planned, committed = folder.planned(listing), folder.committed(listing)
            batches = (len(planned), len(committed))
            if batches != last_batches:
                last_batches, batches_moved = batches, now
            # a stateful query emits its last results in a batch of no data, once the watermark moved:
            # its input is consumed only when no batch is planned or running for a few triggers
            settled = not folder.stateful(listing) or (
                batches[0] == batches[1] and now - batches_moved >= SETTLE_SECONDS)
            finished = settled and target is not None and all(consumed.get(p, 0) >= end for p, end in target.items())
            seen = (done, batches[0], len(schedule.fired), self.supervisor.restarts)
            if seen != last_seen or finished or restarting.is_set():
                last_seen, moved = seen, now
            if finished and not restarting.is_set():
                if faults_done() or not self._stream_can_still_trigger():
                    if final:  # said once, after the heal
                        say(f"{self.name}: input consumed ({total} records, {batches[1]} batches)")
                    return None
            if now > next_report and (seen != last_said or now > next_report + QUIET_REPORT_SECONDS):
                say(f"{self.name}: consumed {done}/{total}, batches committed {batches[1]}, "
                    f"faults fired {len(schedule.fired)}/{len(schedule.steps)}")
                next_report, last_said = now + 5, seen  # a line when something moved, else every 30 s
            running = planned[-1] if planned and planned[-1] not in committed else None
            stop = self.supervisor.check(running)
            if stop is not None:
                stop = {**stop, "explanation": self._first_cause(stop["failures"][0]["t"])}
            elif now - moved > (limit := self._stall_limit(planned)):
                stop = {"reason": f"no progress for {limit:.0f} s"}
            if stop is not None:
                rate = done / max(now - started, 1e-9)
                return {**stop, "reason": f"{stop['reason']} ({done}/{total} consumed)", "consumed": done,
                        "total": total, "records_per_s": round(rate, 1), "seconds": round(now - started, 1)}
            time.sleep(0.5)

    def _stall_limit(self, planned: list[int]) -> float:
        """`stall_timeout` once the stream planned its first batch; before that the driver is still starting,
        which takes longer on a loaded machine than a stream may rest, so its start has a limit of its own."""
        return self.stall_timeout if planned else max(self.stall_timeout, FIRST_BATCH_SECONDS)

    def _first_cause(self, failed_at: float) -> str:
        """The fault that fired last before the query's first failure: where a crash loop began."""
        fired = [(t, self.schedule.steps[i]) for i, t in self.schedule.fired.items() if t <= failed_at]
        if not fired:
            return "the query failed with no fault fired before it"
        t, step = max(fired, key=lambda pair: pair[0])
        return f"the query first failed {failed_at - t:.1f} s after {step} fired"

    def _stream_can_still_trigger(self) -> bool:
        """Once the input is consumed only a clock can still fire a step; other unfired steps are vacuous."""
        return any(step.point == "time" for step in self.schedule.unfired())
