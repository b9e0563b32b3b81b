"""The schedule: arms fault steps on their trigger points and fires each once, on observed progress.

Gate points arrive through the gate (it asks whether to hold), batch points from the checkpoint
watcher, time points from a clock started with the stream. A step fires on its nth match; the
nemesis carries it out on a worker thread so that the gate's loop never waits on Docker.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from harness.faults.nemesis import Nemesis
from harness.faults.spec import ANSWERED_POINTS, ANSWERING, BATCH_POINTS, FIRES_ON, FaultStep
from harness.gate.points import FOR_WATCHER, GateEvent, Held, Hold
from harness.history import History


class CommitHolds(Protocol):
    """A table's commits the gate holds for its watcher (harness.run.table_watch.GateHolds)."""

    def wants(self, event: GateEvent) -> bool: ...

    def add(self, hold: Hold) -> None: ...


class HoldGroup:
    """A held request and every retry of it: what `delay` and `pause` hold must stay held.

    A client whose request goes unanswered may resend it on a new connection (librdkafka does so
    with EndTxn); holding only the first copy would let the retry through on time.
    """

    def __init__(self, first: Hold) -> None:
        self.what = first.what
        self.holds = [first]
        self.outcome: bool | None = None  # None while held; True released; False dropped

    def retries(self, event: GateEvent) -> bool:
        """Whether `event` resends the held request: the same producer (id and epoch) when the request names
        one; a new producer with the same transactional id (a task's copy, a restarted driver) is not."""
        first = self.holds[0].event.request
        request = event.request
        return first.producer_id is None or request.producer_id is None or (
            (first.producer_id, first.producer_epoch) == (request.producer_id, request.producer_epoch))

    def add(self, hold: Hold) -> None:
        if self.outcome is None:
            self.holds.append(hold)
        elif self.outcome:
            hold.release()
        else:
            hold.drop()

    def release(self) -> None:
        self.outcome = True
        for hold in self.holds:
            hold.release()

    def drop(self) -> None:
        self.outcome = False
        for hold in self.holds:
            hold.drop()


class Schedule:
    """Trigger-to-fault steps; an Interceptor for the gate and a listener for the batch watcher."""

    def __init__(self, steps: list[FaultStep], nemesis: Nemesis, history: History,
                 at_gate: CommitHolds | None = None) -> None:
        """`at_gate`: a table's commits to hold at the gate for its watcher (harness.run.table_watch), where
        the driver is not held (a table on object storage)."""
        self.steps = steps
        self.at_gate = at_gate
        self.nemesis = nemesis
        self.history = history
        self.seen = [0] * len(steps)
        self.fired: dict[int, float] = {}
        self.done: set[int] = set()  # steps carried out (a killed driver replaced): `then` counts from there
        self._held: dict[int, int] = {}  # id(event) -> step index
        self._for_table: set[int] = set()  # id(event) of commits held for the table's watcher
        self._retries: dict[int, HoldGroup] = {}  # id(event) -> the group a retry joins
        self._groups: dict[tuple[str, str], HoldGroup] = {}  # (point, transactional id) -> held group
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="nemesis")
        self._timers: list[threading.Timer] = []
        self._closed = False

    def _match(self, point: str, role: str | None, batch: int | None, answered: bool = False) -> int | None:
        """Count the point against every armed step; the index of the step that fires now, if any. A
        service's commit (PostgreSQL's, an HTTP server's) is counted as it arrives, by a `drop` step as it is
        answered."""
        with self._lock:
            if self._closed:
                return None
            for index, step in enumerate(self.steps):
                fires_on = FIRES_ON.get(step.point, step.point)  # a Flink checkpoint's point on its batch point
                if index in self.fired or fires_on != point or (step.after and index - 1 not in self.done):
                    continue
                if step.role is not None and step.role != role:
                    continue
                if point in ANSWERED_POINTS and (step.action in ANSWERING) != answered:
                    continue
                if step.number is not None and point in BATCH_POINTS and batch != int(step.number):
                    continue
                self.seen[index] += 1
                if self.seen[index] == step.nth:
                    event = self.history.record("trigger", step=str(step), point=step.point, detail=str(step))
                    self.fired[index] = event["t"]
                    return index
        return None

    # -- gate --------------------------------------------------------------------------------------

    def on_point(self, event: GateEvent) -> bool | str:
        """A step that fires on a gate point holds it: the nemesis then settles the hold. A table's applied
        commit no step wants is held for its watcher (FOR_WATCHER), where the driver is not held."""
        group = self._groups.get((event.point, event.transactional_id or ""))
        if group is not None and group.outcome is None and group.retries(event):
            self._retries[id(event)] = group
            return True
        index = self._match(event.point, event.peer.role, None, event.answered)
        if index is None:
            if self.at_gate is not None and self.at_gate.wants(event):
                self._for_table.add(id(event))
                return FOR_WATCHER
            return False
        self._held[id(event)] = index
        return True

    def on_hold(self, hold: Hold) -> None:
        if id(hold.event) in self._for_table:
            self._for_table.discard(id(hold.event))
            assert self.at_gate is not None
            self.at_gate.add(hold)
            return
        group = self._retries.pop(id(hold.event), None)
        if group is not None:
            self.history.record("hold.retry", point=hold.event.point,
                                transactional_id=hold.event.transactional_id)
            group.add(hold)
            return
        index = self._held.pop(id(hold.event))
        step = self.steps[index]
        held: Hold | HoldGroup = hold
        if step.action in ("delay", "pause") and hold.event.transactional_id:
            held = self._groups[(hold.event.point, hold.event.transactional_id)] = HoldGroup(hold)
        self._pool.submit(self._carry_out, index, hold.event, held)

    # -- checkpoint and clock ----------------------------------------------------------------------

    def on_batch(self, event: dict) -> None:
        index = self._match(event["type"], None, event["batch"])
        if index is not None:
            self._pool.submit(self._carry_out, index, None, None)

    def on_table_commit(self, event: dict, hold: Held) -> None:
        """A table version at its commit point (harness.run.table_watch), its driver held: a step that
        fires there settles the hold once carried out (a killed driver dies held); else it goes on."""
        index = self._match(event["type"], None, event["batch"])
        if index is None:
            hold.release()
        else:
            self._pool.submit(self._carry_out, index, None, hold)

    def start_clock(self) -> None:
        """Arm the `time` steps, counted from now (the stream started)."""
        for index, step in enumerate(self.steps):
            if step.point == "time":
                timer = threading.Timer(step.number or 0.0, self._on_time, args=(index,))
                timer.daemon = True
                self._timers.append(timer)
                timer.start()

    def _on_time(self, index: int) -> None:
        with self._lock:
            if index in self.fired:
                return
            event = self.history.record("trigger", step=str(self.steps[index]), point="time",
                                        detail=str(self.steps[index]))
            self.fired[index] = event["t"]
        self._pool.submit(self._carry_out, index, None, None)

    def _carry_out(self, index: int, event: GateEvent | None, held: Hold | HoldGroup | None) -> None:
        """Inject a step (on the nemesis's thread); the step after it, if `then`, counts from its end:
        points seen while a killed driver is replaced are the old application's, not the recovery's."""
        self.nemesis.inject(self.steps[index], event, held)
        with self._lock:
            self.done.add(index)

    # -- end -----------------------------------------------------------------------------------------

    @property
    def all_fired(self) -> bool:
        return len(self.fired) == len(self.steps)

    def unfired(self) -> list[FaultStep]:
        return [step for index, step in enumerate(self.steps) if index not in self.fired]

    def close(self) -> None:
        """Fire nothing more; stop the clock and wait for faults being injected."""
        with self._lock:
            self._closed = True
        for timer in self._timers:
            timer.cancel()
        self._pool.shutdown(wait=True)
