"""A session of the harness: the images, one started cluster and the run's folder (run.json, the
cluster's logs, the index page), and the scenarios run on it, each given its oracle. Every front end
(run, smoke, certify and its workers, the pytest plugin) and the benchmarks open their cluster here."""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness import settings, versions
from harness.client.workload import Workload
from harness.cluster import images
from harness.cluster.engine import engine_socket_url
from harness.cluster.topology import Cluster
from harness.errors import BadInput, HarnessError
from harness.evidence import write_evidence
from harness.faults.spec import FaultStep, parse_schedule, spark_steps
from harness.output.registry import state_tables, store
from harness.report import write_index
from harness.report.folders import run_report_dir
from harness.run.oracles import oracle_for
from harness.run.scenario import Scenario
from harness.subject.bundle import Bundle, resolved
from harness.subject.code_spec import STATE_TABLE, CodeSpec, resolve_sink
from harness.subject.dependencies import Dependencies
from harness.subject.dependencies import from_environment as environment_dependencies
from harness.subject.pipeline import Pipeline, load_pipeline

CLUSTER_LOGS = "cluster-logs"  # every container's log, in the run's folder, when the session ends
TRACEBACK = "traceback.txt"  # an unforeseen error's traceback, in the run's folder (the console gets one line)


def scenario(cluster: Cluster, name: str, *, pipeline: str | Pipeline = settings.SETTINGS["pipeline"].default,
             sink: str | CodeSpec = settings.SETTINGS["sink"].default, faults: Sequence[str | FaultStep] = (),
             records: int | None = None, seed: int | None = None, stall_timeout: float | None = None,
             rate: float = 0.0, state_store: str = settings.SETTINGS["state_store"].default,
             partitions: int = 4, max_offsets_per_trigger: int | None = None,
             speculation: bool = False, restarts: int | None = None, output: str | None = None,
             store: str | None = None, dependencies: Dependencies | None = None,
             engine_read: bool | None = None) -> Scenario:
    """A scenario on `cluster`, judged by the pipeline's model, else by its own fault-free output.
    Unset numbers and the output (kafka, delta) come from the environment (HARNESS_RECORDS, HARNESS_OUTPUT, ...)
    or their defaults (harness.settings), as do the sink's `dependencies` (HARNESS_PY_PACKAGE, ...) and
    `engine_read` (HARNESS_ENGINE_READ)."""
    loaded = pipeline if isinstance(pipeline, Pipeline) else load_pipeline(pipeline)
    code = sink if isinstance(sink, CodeSpec) else resolve_sink(sink)
    output = checked_output(code, output or settings.from_environment("output"),
                            cluster.images.stack if cluster is not None else None)
    table_store = checked_store(output, store or settings.from_environment("store"),
                                cluster.images.stack if cluster is not None else None)
    if code.table == STATE_TABLE and output not in state_tables():
        raise BadInput(f"sink '{code.spec}' keeps a state table (its TABLE): only a table output is judged as one "
                       f"({', '.join(state_tables())}: their history tells a repeat), not {output}; run it with "
                       f"--output {' or --output '.join(state_tables())}")
    steps = spark_steps(parse_schedule([str(step) for step in faults]))
    workload = Workload(records if records is not None else settings.from_environment("records"),
                        seed=seed if seed is not None else settings.from_environment("seed"))
    return Scenario(cluster, name, loaded, code, oracle_for(cluster, loaded), steps, workload, partitions,
                    stall_timeout if stall_timeout is not None else settings.from_environment("stall_timeout"),
                    max_offsets_per_trigger, state_store, rate, speculation,
                    restarts if restarts is not None else settings.from_environment("restarts"),
                    output, table_store, bundle_of(cluster, dependencies),
                    engine_read if engine_read is not None else settings.from_environment("engine_read") == "yes")


def bundle_of(cluster: Cluster, dependencies: Dependencies | None) -> Bundle | None:
    """What ships with the sink on `cluster`'s Spark image (the environment's dependencies unless given),
    None when nothing does."""
    given = dependencies if dependencies is not None else environment_dependencies()
    return resolved(given, cluster.images.spark.tag) if given else None


def checked_output(code: CodeSpec, output: str, stack: versions.Stack | None = None) -> str:
    """The output a sink runs into, checked before a cluster starts: one the Spark line asked for (or
    `stack`'s) runs, and the one the sink says it writes (its OUTPUT); BadInput saying what to write instead."""
    why = store(output).unsupported(stack or versions.stack())
    if why:
        raise BadInput(f"output {output}: {why}")
    if code.output is not None and code.output != output:
        raise BadInput(f"sink '{code.spec}' writes the {code.output} output (its OUTPUT): run it with "
                       f"--output {code.output} (HARNESS_OUTPUT), not {output}")
    return output


def checked_store(output: str, where: str, stack: versions.Stack | None = None) -> str:
    """Where the output's table lives (the `store` setting), checked before a cluster starts."""
    if where not in store(output).stores:
        raise BadInput(f"output {output} lives on {' or '.join(store(output).stores)} only, not --store {where}")
    why = store(output).unsupported_on(stack or versions.stack(), where)
    if why:
        raise BadInput(f"--store s3: {why}")
    return where


@dataclass(frozen=True)
class Session:
    """A started cluster and its run's report folder."""

    cluster: Cluster
    folder: Path

    def scenario(self, name: str, **options: object) -> Scenario:
        """A scenario on this session's cluster (options as for `scenario`)."""
        return scenario(self.cluster, name, **options)  # type: ignore[arg-type]


@contextmanager
def session(run_id: str | None = None, workers: int = 2, brokers: int | None = None,
            spark: str | None = None, iceberg: str | None = None, output: str | None = None,
            store: str | None = None, dependencies: Dependencies | None = None) -> Iterator[Session]:
    """The images its runs start built where missing, a cluster started; on the way out, whatever happened, the
    cluster's logs saved, the run's index written and the cluster removed. An unforeseen error's traceback is
    kept in the run's folder (`error.traceback_file`), so a front end can say it in one line. `workers`: Spark
    workers (0: Kafka and toxiproxy only, for the benchmarks of the reader and the gate); `brokers`: Kafka
    brokers (default: the `brokers` setting); `spark`, `iceberg`: releases other than the settings'; `output`,
    `store`: what its scenarios write into (default: the settings'), whose servers' images are had with the
    cluster's (a scenario into another output has its images where its store starts them). The sink's
    `dependencies` (default: the environment's) are resolved once the images are had, before the cluster
    starts: one that does not resolve is bad input before any container runs."""
    stack = versions.stack(spark, iceberg)
    images.build_for(output or settings.from_environment("output"), store or settings.from_environment("store"),
                     stack)
    given = dependencies if dependencies is not None else environment_dependencies()
    if given:
        resolved(given, images.current(stack).spark.tag)
    with Cluster(workers=workers, run_id=run_id, brokers=brokers, stack=stack) as cluster, kept(cluster) as opened:
        yield opened


@contextmanager
def kept(cluster: Cluster, **described: str) -> Iterator[Session]:
    """A started cluster's run folder (run.json, with `described` beside the run and its engine): on the way out,
    whatever happened, the cluster's logs saved and the run's index written; an unforeseen error's traceback kept."""
    folder = run_report_dir(cluster.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    write_evidence(folder / "run.json", json.dumps({"run": cluster.run_id, "engine": engine_socket_url(),
                                                    **described}))
    try:
        yield Session(cluster, folder)
    except Exception as error:
        if not isinstance(error, HarnessError):
            keep_traceback(error, folder / TRACEBACK)
        raise
    finally:
        cluster.save_logs(folder / CLUSTER_LOGS)
        write_index(folder)


def keep_traceback(error: BaseException, path: Path) -> Path:
    """Write an unforeseen error's traceback to `path` (once: the innermost session's) and remember where."""
    if getattr(error, "traceback_file", None) is None:
        write_evidence(path, "".join(traceback.format_exception(error)))
        error.traceback_file = path  # type: ignore[attr-defined]
    return error.traceback_file  # type: ignore[attr-defined]
