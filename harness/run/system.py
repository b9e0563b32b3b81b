"""A running scenario's parts: its topics, the system under test (its input, its output, its query's
checkpoint and driver), the faults wired to it with the watchers that record it, and how all of them are
stopped before the output is read."""

from __future__ import annotations

from dataclasses import dataclass

from harness.client.scenario_input import ScenarioInput
from harness.faults.schedule import Schedule
from harness.gate.points import Observe
from harness.gate.proxy import KafkaGate
from harness.gate.s3_requests import no_commits
from harness.output.base import Hold, Output, Watcher
from harness.run.checkpoint import BatchWatcher, CheckpointFolder
from harness.run.driver_supervisor import DriverSupervisor
from harness.run.leadership import LeadershipWatch


@dataclass(frozen=True)
class Topics:
    """A scenario's topics, each named for it alone: its input, its output (a topic sink's), the sink's markers."""

    input: str
    output: str
    markers: str


@dataclass(frozen=True)
class System:
    """The system under test, ready to start: its input, its output, its query's checkpoint (with the watcher
    of its batches, not yet started) and the supervisor of its driver."""

    input: ScenarioInput
    output: Output
    hold: Hold | None  # where the driver is held at each of a table's commits (harness.output.base)
    folder: CheckpointFolder
    watcher: BatchWatcher
    supervisor: DriverSupervisor


@dataclass(frozen=True)
class Faults:
    """The faults' schedule, wired to the gate whose points trigger it, and the watchers started with it."""

    schedule: Schedule
    gate: KafkaGate
    tables: Watcher | None  # a table's commit point (harness.run.table_watch), None for a topic
    leadership: LeadershipWatch | None  # the partitions' leaders, on more than one broker


def stop(system: System, faults: Faults) -> None:
    """Live input ended, the gate back to observing, every fault healed and no more fired, the watchers
    stopped and the driver retired: nothing of the run moves while its output is read."""
    system.input.stop()
    faults.gate.interceptor, faults.gate.record, faults.gate.outputs = Observe(), _ignore, set()
    faults.gate.copies, faults.gate.commit_keys = None, no_commits
    faults.schedule.close()
    faults.schedule.nemesis.heal_all()
    faults.schedule.nemesis.close()
    system.watcher.stop()
    if faults.tables is not None:
        faults.tables.stop()
    if faults.leadership is not None:
        faults.leadership.stop()
    system.supervisor.retire()


def _ignore(type: str, **fields: object) -> None:
    """The gate's recorder between scenarios."""
