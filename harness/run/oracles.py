"""The oracles a scenario can be judged by, and the choice between them: a pipeline's exact model when
it has one, else its own fault-free output (differential, harness.run.reference)."""

from __future__ import annotations

from harness.checker.differential import DifferentialCheck, FinalTable
from harness.checker.oracle import Check, ConsumedInput, Oracle
from harness.checker.state_table import StateTableCheck, key_of_bytes
from harness.checker.verdict import Anomaly, Expected
from harness.client.reader import ReadResult
from harness.client.records import Record, Records
from harness.client.workload import SendLog, Workload
from harness.cluster.topology import Cluster
from harness.errors import BadInput
from harness.run.reference import reference_output
from harness.subject.pipeline import Pipeline


class ModelOracle:
    """The pipeline's model over the input whose sends were acknowledged."""

    name = "model"

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def prepare(self, workload: Workload, partitions: int) -> None:
        """Nothing: the model is computed from the sends."""

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None,
              ordered: bool = True) -> Check:
        expected = self._expected(workload, sends)
        required = None
        if consumed is not None:  # incomplete: only the results of consumed input can be lost
            required = {identity for identity, want in self.pipeline.expected(consumed()).items() if want.required}
        return self.pipeline.output_check(expected, required, ordered)

    def state_check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        """Each key's row against the key's final result: its identity first, then (on the rows whose
        identity is right) the value the pipeline's own checkers compare."""
        expected = self._expected(workload, sends)
        finals: dict[str, str] = {}
        for identity, want in expected.items():
            if want.required and finals.setdefault(want.key, identity) != identity:
                raise BadInput(f"pipeline '{self.pipeline.name}' has several final results for key {want.key!r} "
                               f"({finals[want.key]}, {identity}): a state table keeps one row per key, so it "
                               "cannot hold this pipeline's output")
        identity = self.pipeline.identity
        assert identity is not None, "a model comes with its identity"

        def values(rows: list[Record], identities: list[str]) -> dict[str, Anomaly]:
            check = self.pipeline.output_check({i: expected[i] for i in identities}, set(identities))
            check.feed(rows)
            verdict = check.verdict(ReadResult([], {}, {}))
            if verdict.error:
                raise RuntimeError(verdict.error)
            return verdict.anomalies

        return StateTableCheck(finals, identity, self.name, values,
                               {key: expected[i].value for key, i in finals.items() if expected[i].value is not None})

    def _expected(self, workload: Workload, sends: SendLog) -> dict[str, Expected]:
        """The model over the input whose sends were acknowledged."""
        inputs = enumerate(self.pipeline.inputs(workload))  # the same records in the same order as sent
        return self.pipeline.expected(r for n, r in inputs if sends.was_acked(n))


class ReferenceOracle:
    """The pipeline's own fault-free output on the same workload (two runs that must agree first)."""

    name = "reference"

    def __init__(self, cluster: Cluster, pipeline: Pipeline) -> None:
        self.cluster, self.pipeline = cluster, pipeline
        self.reference: Records | None = None

    def prepare(self, workload: Workload, partitions: int) -> None:
        self.reference = reference_output(self.cluster, self.pipeline, workload, partitions)

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None,
              ordered: bool = True) -> Check:
        assert self.reference is not None, "prepare() runs first"
        return DifferentialCheck(self.reference, self.pipeline.output_mode)

    def state_check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        """Each key's row against the reference's last update of that key, byte for byte."""
        assert self.reference is not None, "prepare() runs first"
        table = FinalTable()
        table.add(self.reference)
        finals, split = table.finals()
        if split:
            key = next(iter(split))
            raise BadInput(f"pipeline '{self.pipeline.name}': its fault-free output has no one last value for key "
                           f"{key!r} (it is written to several partitions): a state table of it has no one right row")
        return StateTableCheck({key_of_bytes(k): v for k, v in finals.items()}, bytes, "differential")


def oracle_for(cluster: Cluster, pipeline: Pipeline) -> Oracle:
    """The model when the pipeline has one, else its fault-free output."""
    return ReferenceOracle(cluster, pipeline) if pipeline.differential else ModelOracle(pipeline)
