"""A scenario's input: produced before the stream starts (a backlog), or while it runs at a fixed rate
(live input: a pipeline started from `latest`, empty batches and a watermark that moves with arrival
show only then). Either way the same records; the end offsets are known once production ended. Live input
sends its first record, then waits for the stream's first batch (`hold`), then goes on at its rate."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from harness.client.topics import end_offsets
from harness.client.workload import InputRecord, SendLog, WorkloadProducer
from harness.errors import InfrastructureError
from harness.history import History


class ScenarioInput:
    """Produces `inputs` to `topic`, now (`produce`) or on a thread of its own (`start`, `stop`)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, inputs: Iterable[InputRecord], rate: float,
                 history: History, hold: Callable[[], None] | None = None) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.inputs, self.rate, self.history, self.hold = inputs, rate, history, hold
        self._log: SendLog | None = None
        self._error: BaseException | None = None
        self._ends: dict[int, int] | None = None
        self._thread: threading.Thread | None = None

    def produce(self) -> None:
        """Produce every record and wait for their acknowledgements."""
        try:
            self._log = WorkloadProducer(self.bootstrap).produce(self.topic, self.inputs, self.rate, self.history,
                                                                  self.hold)
            self.history.record("input.produced", topic=self.topic)  # the judge: was live input live?
        except BaseException as error:  # noqa: BLE001 - raised again in the scenario's thread by sends()
            self._error = error
            raise

    def start(self) -> None:
        self._thread = threading.Thread(target=self._produce_quietly, name="live-input", daemon=True)
        self._thread.start()

    def _produce_quietly(self) -> None:
        try:
            self.produce()
        except BaseException:  # noqa: BLE001 - kept in self._error
            pass

    def stop(self) -> None:
        """Wait for production to end (it ends on its own: the workload is finite)."""
        if self._thread is not None:
            self._thread.join()

    def target(self) -> dict[int, int] | None:
        """The input's end offsets, once production ended (None before: the stream has more to read)."""
        if self._ends is None and (self._log is not None or self._error is not None):
            if self._error is not None:
                raise InfrastructureError(f"producing the input to {self.topic}: {self._error!r}")
            self._ends = end_offsets(self.bootstrap, self.topic, self.partitions)
        return self._ends

    def sends(self, scenario: str) -> SendLog:
        """The send log, every send acknowledged (else InfrastructureError: no verdict can be trusted)."""
        self.stop()
        if self._error is not None or self._log is None:
            raise InfrastructureError(f"{scenario}: producing the input failed: {self._error!r}")
        self._log.check(scenario)
        return self._log
