"""The oracle a scenario is judged by, as a protocol: what the output should be (a pipeline's exact
model, a fault-free run's output) is chosen above the scenario, which only asks it for a check.

Implementations: `harness.run.oracles` (model, reference), and `CaptureOracle` here for the reference
runs themselves, whose output is the model of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from harness.checker.differential import Capture
from harness.checker.verdict import Verdict
from harness.client.reader import ReadResult
from harness.client.records import Record
from harness.client.workload import InputRecord, SendLog, Workload

ConsumedInput = Callable[[], Iterable[InputRecord]]  # the input the checkpoint says was consumed, in produce order


class Check(Protocol):
    """Checks one output as the reader reads it, then gives the verdict."""

    def feed(self, batch: list[Record]) -> None: ...

    def verdict(self, read: ReadResult, incomplete: Mapping[str, object] | None = None) -> Verdict: ...


class Oracle(Protocol):
    """What a scenario's output is compared with."""

    name: str  # model, reference (a fault-free run's output) or capture (a reference run itself)

    def prepare(self, workload: Workload, partitions: int) -> None:
        """Work before the scenario runs (the reference runs of a pipeline without a model)."""

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None,
              ordered: bool = True) -> Check:
        """The check of this scenario's output; `consumed` is given when the run was incomplete (only
        what the consumed input yields can then be missing); `ordered`: the output's partitions are
        sequences (Kafka's), else no order within them is judged (a table's files)."""

    def state_check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        """The check of a state table (one row per key: harness.checker.state_table): each key's row
        against the key's final value."""


class CaptureOracle:
    """A reference run: its output is the model, so it is judged only to have finished."""

    name = "capture"

    def prepare(self, workload: Workload, partitions: int) -> None:
        """Nothing: a reference run compares with nothing."""

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None,
              ordered: bool = True) -> Check:
        return Capture()

    def state_check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        return Capture()
