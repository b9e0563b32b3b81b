"""`explore --workers N`: N worker processes, each with its own cluster on its own engine, exploring the
same space into one coverage store. Each runs its own baseline, then claims combinations in the store
one at a time (harness.explore.coverage), so no two run the same one at once and each sees what the
others finished. A worker sends back its rows when its budget is spent.

Nothing is left running: a Ctrl-C or SIGTERM of this process sends SIGTERM to every worker, then waits
while each removes its cluster (as `certify --workers` does).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path

from harness.certify.rows import MatrixRun
from harness.certify.worker import Worker
from harness.errors import EXIT_INFRASTRUCTURE, HarnessError
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import BaselineFailed, Exploration, explore
from harness.interrupt import terminate_like_ctrl_c
from harness.progress import say, speak_as
from harness.run.session import session
from harness.subject.shipment import Shipment, adopt


@dataclass(frozen=True)
class ExploreJob:
    """What every worker explores with."""

    run: MatrixRun
    budget_s: float
    store: Path
    stop_at_first: bool
    shipments: tuple[Shipment, ...] = ()  # the parent's reading of the code: every worker ships those bytes


def work(worker: Worker, job: ExploreJob, results: Queue) -> None:
    """A worker process's body: its cluster, its explore; its Exploration (or its error) to `results`."""
    os.environ["DOCKER_HOST"] = worker.engine  # before anything talks to Docker: the client is made once
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    terminate_like_ctrl_c()
    speak_as(worker.name)
    adopt(job.shipments)
    try:
        with session(run_id=worker.run_id, output=job.run.output, store=job.run.store,
                     dependencies=job.run.dependencies) as opened:
            found = explore(opened.cluster, job.run, job.budget_s, CoverageStore(job.store), job.stop_at_first,
                            worker=worker.name)
        results.put((worker.index, found, str(opened.folder)))
    except BaselineFailed as failed:
        results.put((worker.index, failed, ""))
    except HarnessError as error:
        results.put((worker.index, error, ""))
        raise SystemExit(error.exit_status) from None
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INFRASTRUCTURE) from None


def explore_spread(job: ExploreJob, workers: list[Worker]) -> list[tuple[Worker, Exploration | Exception, str]]:
    """Every worker's exploration (or what stopped it), with its run folder."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no Docker client, no handlers
    results: Queue = context.Queue()
    processes = [context.Process(target=work, args=(worker, job, results), name=f"explore-{worker.name}")
                 for worker in workers]
    for process in processes:
        process.start()
    found: dict[int, tuple[Exploration | Exception, str]] = {}
    try:
        while len(found) < len(workers):
            try:
                index, outcome, folder = results.get(timeout=1.0 if any(p.is_alive() for p in processes) else 5.0)
            except queue.Empty:
                if any(p.is_alive() for p in processes):
                    continue
                break  # every worker ended, and what they sent has been read
            found[index] = (outcome, folder)
    except BaseException:
        say("stopping the workers; each removes its cluster ...")
        for process in processes:
            if process.is_alive():
                process.terminate()
        raise
    finally:
        for process in processes:
            process.join()
    return [(w, *found.get(w.index, (RuntimeError(f"worker {w.name} ended without a result"), ""))) for w in workers]
