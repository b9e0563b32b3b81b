"""One worker process of a spread certification: its own engine, its own cluster, rows taken from the
shared queue one at a time until the parent hands it None.

It is a process of its own because the Docker client (harness.cluster.engine), the signal handlers and
the run's reaper are all per process. Ctrl-C is left to the parent, which stops its workers with SIGTERM,
so a worker is interrupted once and its cluster's `with` block removes the cluster.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Lock
from typing import Protocol

from harness.certify import Row, observed, run_scenario
from harness.certify_tally import Failed, Finished, Took, Worker
from harness.cluster import images
from harness.cluster.topology import Cluster
from harness.code_spec import SinkSpec, resolve_sink
from harness.errors import EXIT_INFRASTRUCTURE, HarnessError
from harness.interrupt import terminate_like_ctrl_c
from harness.matrix import MatrixScenario
from harness.progress import speak_as
from harness.report import write_index
from harness.report.folders import run_report_dir

RunRow = Callable[[MatrixScenario], tuple[Row, str, bool]]  # a row -> (its outcome, sink kind, stateful)


class Job(Protocol):
    """How a worker runs rows: a session (its cluster) that yields a row runner."""

    def session(self, worker: Worker, images_lock: Lock) -> AbstractContextManager[RunRow]: ...


@dataclass(frozen=True)
class CertifyJob:
    """The certify command's settings, sent to every worker."""

    sink: str
    pipeline: str
    seed: int
    records: int
    stall_timeout: float
    rate: float

    @contextmanager
    def session(self, worker: Worker, images_lock: Lock) -> Iterator[RunRow]:
        """The worker's images and cluster; its run folder keeps the cluster's logs and the run's index."""
        if images.missing():  # an engine's first use; builds share the host's build folders: one at a time
            with images_lock:
                images.build_all()
        folder = run_report_dir(worker.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "run.json").write_text(json.dumps({"run": worker.run_id, "engine": worker.engine}))
        sink = resolve_sink(self.sink)
        with Cluster(run_id=worker.run_id) as cluster:
            try:
                yield partial(self._run, cluster, sink)
            finally:
                cluster.save_logs(folder / "cluster-logs")
                write_index(folder)

    def _run(self, cluster: Cluster, sink: SinkSpec, row: MatrixScenario) -> tuple[Row, str, bool]:
        outcome, result = run_scenario(cluster, sink, row, self.seed, self.records, self.pipeline,
                                       self.stall_timeout, self.rate)
        return (outcome, *observed(result))


def serve(worker: Worker, job: Job, tasks: Queue, results: Queue, images_lock: Lock) -> None:
    """The worker process's body: messages (Took, Finished, Failed) go to `results`."""
    os.environ["DOCKER_HOST"] = worker.engine  # before anything talks to Docker: the client is made once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminate_like_ctrl_c()
    speak_as(worker.name)
    try:
        with job.session(worker, images_lock) as run:
            while (row := tasks.get()) is not None:
                results.put(Took(worker.index, row))
                results.put(Finished(worker.index, *run(row)))
    except HarnessError as error:
        results.put(Failed(worker.index, error.exit_status, str(error)))
        raise SystemExit(error.exit_status) from None
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INFRASTRUCTURE) from None
