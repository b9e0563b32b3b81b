"""One worker process of a spread certification (harness.certify.scheduler): its own engine, its own
cluster, rows taken from its queue one at a time until the parent hands it None; and the messages it sends
back: Ready once its cluster is up, Finished for each row, Failed for the error that ended it.

It is a process of its own because the Docker client (harness.cluster.engine), the signal handlers and
the run's reaper are all per process. Ctrl-C is left to the parent, which stops its workers with SIGTERM,
so a worker is interrupted once and its cluster's `with` block removes the cluster. A parent killed with
SIGKILL stops nothing: each worker sees itself orphaned and stops as on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from multiprocessing.queues import Queue
from typing import Protocol

from harness.certify.matrix import MatrixScenario
from harness.certify.rows import MatrixRun, Row, observed, run_row
from harness.cluster.topology import Cluster
from harness.errors import EXIT_INFRASTRUCTURE, HarnessError
from harness.faults.space import Observation
from harness.interrupt import terminate_like_ctrl_c
from harness.progress import speak_as
from harness.run.session import session
from harness.subject.shipment import Shipment, adopt


@dataclass(frozen=True)
class Worker:
    """One worker process: its number, the engine (DOCKER_HOST) it runs on, its run (its cluster's labels
    and its report folder)."""

    index: int
    engine: str
    run_id: str

    @property
    def name(self) -> str:
        return f"w{self.index}"


@dataclass(frozen=True)
class Ready:
    """A worker's cluster is up: it can take rows."""

    worker: int


@dataclass(frozen=True)
class Finished:
    """A worker ran a row; with what that run showed of the sink and pipeline (the baseline's decides the plan)."""

    worker: int
    row: Row
    seen: Observation
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Failed:
    """A worker ended on an error (its cluster did not start, the sink is bad input): its last message."""

    worker: int
    status: int
    error: str


RunRow = Callable[[MatrixScenario], tuple[Row, Observation]]  # a row -> its outcome, what its run showed


class Job(Protocol):
    """How a worker runs rows: a session (its cluster) that yields a row runner."""

    def session(self, worker: Worker) -> AbstractContextManager[RunRow]: ...


@dataclass(frozen=True)
class CertifyJob:
    """The certify command's settings, sent to every worker."""

    run: MatrixRun
    shipments: tuple[Shipment, ...] = ()  # the parent's reading of the code: every worker ships those bytes

    @contextmanager
    def session(self, worker: Worker) -> Iterator[RunRow]:
        """The worker's session (images built one at a time on a machine, its cluster, its run folder)."""
        adopt(self.shipments)
        with session(run_id=worker.run_id, output=self.run.output, store=self.run.store,
                     dependencies=self.run.dependencies) as opened:
            yield partial(self._run, opened.cluster)

    def _run(self, cluster: Cluster, row: MatrixScenario) -> tuple[Row, Observation]:
        outcome, result = run_row(cluster, self.run, row)
        return outcome, observed(result)


ORPHAN_CHECK_S = 1.0


def stop_when_orphaned() -> None:
    """SIGTERM to this process once its parent is gone (it is then another process's child)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_CHECK_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="orphan-watch", daemon=True).start()


def serve(worker: Worker, job: Job, tasks: Queue, results: Queue) -> None:
    """The worker process's body: messages (Ready, Finished, Failed) go to `results`."""
    os.environ["DOCKER_HOST"] = worker.engine  # before anything talks to Docker: the client is made once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminate_like_ctrl_c()
    stop_when_orphaned()
    speak_as(worker.name)
    try:
        with job.session(worker) as run:
            results.put(Ready(worker.index))
            while (row := tasks.get()) is not None:
                results.put(Finished(worker.index, *run(row)))
    except HarnessError as error:
        results.put(Failed(worker.index, error.exit_status, str(error)))
        raise SystemExit(error.exit_status) from None
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INFRASTRUCTURE) from None
