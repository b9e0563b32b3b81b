"""A session with Flink as its engine (harness.run.session's, for `--engine flink`): the images had, a Flink
cluster started, the run's folder kept; its scenarios run Flink jobs (harness.catalog.jobs, or a user's file)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from harness import settings, versions
from harness.client.workload import Workload
from harness.cluster import images
from harness.cluster.flink_cluster import FlinkCluster
from harness.errors import BadInput
from harness.faults.spec import FaultStep, parse_schedule
from harness.run.flink_scenario import FlinkScenario
from harness.run.oracles import oracle_for
from harness.run.session import Session, kept
from harness.subject.code_spec import CodeSpec, import_code, locate
from harness.subject.pipeline import load_pipeline


def resolve_job(spec: str) -> CodeSpec:
    """A Flink job as users name it: a catalog name (`kafka_exactly_once`), a module or a file (`my_job.py`),
    with a `job(env, context)` function and the `PIPELINE` whose model judges its output."""
    code = locate(spec, "job", "job")
    if not callable(getattr(import_code(code, "job"), code.attribute, None)):
        raise BadInput(f"job '{spec}': no function {code.attribute}(env, context)")
    if code._declared("PIPELINE") is None:
        raise BadInput(f"job '{spec}': say which pipeline's model judges its output (PIPELINE = 'passthrough')")
    return code


def job_pipeline(code: CodeSpec) -> str:
    """The pipeline whose model judges a job's output, as its `PIPELINE` names it (resolve_job checked it)."""
    return str(code._declared("PIPELINE") or "passthrough")


def flink_scenario(cluster: FlinkCluster, name: str, *, job: str | CodeSpec, faults: Sequence[str | FaultStep] = (),
                   records: int | None = None, seed: int | None = None, stall_timeout: float | None = None,
                   partitions: int = 4) -> FlinkScenario:
    """A scenario of a Flink job on `cluster`, judged by the model of the pipeline the job names."""
    code = job if isinstance(job, CodeSpec) else resolve_job(job)
    pipeline = load_pipeline(job_pipeline(code))
    workload = Workload(records if records is not None else settings.from_environment("records"),
                        seed=seed if seed is not None else settings.from_environment("seed"))
    return FlinkScenario(cluster, name, pipeline, code, oracle_for(cluster, pipeline),
                         parse_schedule([str(step) for step in faults]), workload, partitions,
                         stall_timeout if stall_timeout is not None else settings.from_environment("stall_timeout"),
                         None, settings.SETTINGS["state_store"].default, 0.0)


@contextmanager
def flink_session(run_id: str | None = None, brokers: int | None = None) -> Iterator[Session]:
    """A started Flink cluster and its run's folder; its logs saved, its index written and the cluster removed on
    the way out, whatever happened."""
    stack = versions.stack()
    images.build_for("kafka", "volume", stack)
    images.needed(images.flink_image(stack.flink))
    with FlinkCluster(run_id=run_id, brokers=brokers, stack=stack) as cluster, \
            kept(cluster, flink=stack.flink) as opened:
        yield opened
