"""The oracles a scenario can be judged by, and the choice between them: a pipeline's exact model when
it has one, else its own fault-free output (differential, harness.run.reference)."""

from __future__ import annotations

from harness.checker.differential import DifferentialCheck
from harness.checker.oracle import Check, ConsumedInput, Oracle
from harness.client.records import Records
from harness.client.workload import SendLog, Workload
from harness.cluster.topology import Cluster
from harness.run.reference import reference_output
from harness.subject.pipeline import Pipeline


class ModelOracle:
    """The pipeline's model over the input whose sends were acknowledged."""

    name = "model"

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def prepare(self, workload: Workload, partitions: int) -> None:
        """Nothing: the model is computed from the sends."""

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        inputs = enumerate(self.pipeline.inputs(workload))  # the same records in the same order as sent
        expected = self.pipeline.expected(r for n, r in inputs if sends.was_acked(n))
        required = None
        if consumed is not None:  # incomplete: only the results of consumed input can be lost
            required = {identity for identity, want in self.pipeline.expected(consumed()).items() if want.required}
        return self.pipeline.output_check(expected, required)


class ReferenceOracle:
    """The pipeline's own fault-free output on the same workload (two runs that must agree first)."""

    name = "reference"

    def __init__(self, cluster: Cluster, pipeline: Pipeline) -> None:
        self.cluster, self.pipeline = cluster, pipeline
        self.reference: Records | None = None

    def prepare(self, workload: Workload, partitions: int) -> None:
        self.reference = reference_output(self.cluster, self.pipeline, workload, partitions)

    def check(self, workload: Workload, sends: SendLog, consumed: ConsumedInput | None) -> Check:
        assert self.reference is not None, "prepare() runs first"
        return DifferentialCheck(self.reference, self.pipeline.output_mode)


def oracle_for(cluster: Cluster, pipeline: Pipeline) -> Oracle:
    """The model when the pipeline has one, else its fault-free output."""
    return ReferenceOracle(cluster, pipeline) if pipeline.differential else ModelOracle(pipeline)
