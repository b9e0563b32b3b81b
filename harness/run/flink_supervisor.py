"""A scenario's Flink job over its life, in the driver supervisor's place (harness.run.driver_supervisor): submitted
to the session cluster, resubmitted from its latest completed checkpoint when the nemesis replaces the JobManager
(the job's driver: Flink without high availability loses its jobs with it, and an operator restores them so),
stopped with a savepoint at the end. Flink restarts a job that fails on its own (its restart strategy); a job that
Flink gave up on has failed for good: the sink's crash loop, never an unknown. A job the first submission cannot
build or start is bad input."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.cluster.flink import FlinkJobManager
from harness.cluster.flink_cluster import FlinkCluster
from harness.errors import BadInput, NotReady
from harness.evidence import write_evidence
from harness.history import History
from harness.run.driver_supervisor import CRASH_LOOP
from harness.run.flink_checkpoints import FlinkCheckpoints

GONE = ("FAILED",)  # Flink gave up on the job (its restart strategy ran out)
CLIENT_LINES = 12  # of the client's output, quoted when a submission fails


def client_error(said: str) -> str:
    """The client's own words on a failed submission: the job's error line, else the innermost cause of what the
    job's Python raised (before Flink's client says the Python process ended), else its last lines."""
    marked = re.search(r"^HARNESS-JOB-ERROR (.*)$", said, re.M)
    if marked:
        return marked.group(1)[:400]
    job_part = said.split("org.apache.flink.client.program.ProgramAbortException")[0]
    caused = re.findall(r"^\s*(?:Caused by: )?([\w.]+(?:Exception|Error): .*)$", job_part, re.M)
    return (caused[-1] if caused else " | ".join(said.strip().splitlines()[-CLIENT_LINES:]))[:400]


class JobSupervisor:
    """One job of the scenario at a time; `restarts` counts the JobManager's replacements."""

    def __init__(self, cluster: FlinkCluster, name: str, args: list[str], history: History, logs: Path,
                 job: str, slots: int) -> None:
        self.cluster = cluster
        self.name = name
        self.args = args
        self.history = history
        self.logs = logs
        self.job = job  # named when the job cannot be submitted
        self.slots = slots
        self.checkpoints: FlinkCheckpoints | None = None  # set by the scenario: where a restored job starts from
        self.jobs: list[str] = []  # every job id submitted, oldest first
        self.restarts = 0
        self.failures: list[dict] = []
        self.restarting = threading.Event()
        self._replacing = threading.Lock()

    def job_ids(self) -> list[str]:
        return list(self.jobs)

    def start(self) -> None:
        """Submit the job (from the latest completed checkpoint, once there is one) and see it accepted."""
        manager = self.cluster.jobmanager
        manager.wait_for_slots(self.slots)
        restore = self.checkpoints.latest() if self.checkpoints is not None and self.jobs else None
        submitted = time.time()
        job, said = manager.submit(self.args, restore)
        write_evidence(self.logs / f"flink-client.{len(self.jobs) + self.restarts}.log", said)
        if job is None:
            why = client_error(said)
            if not self.jobs:
                raise BadInput(f"Flink job '{self.job}' was not submitted: {why}")
            raise NotReady(f"Flink job '{self.job}' was not submitted again: {why}")
        self.jobs.append(job)
        self.history.record("container.start", container=manager.alias, role="driver", restart=self.restarts,
                            submitted=round(submitted, 3), job=job, restored_from=restore)

    def current(self) -> FlinkJobManager:
        return self.cluster.jobmanager

    def replace(self, kill: Callable[[], None]) -> None:
        """End the JobManager with `kill`, start a new one and submit the job again from its latest completed
        checkpoint; replacements take turns."""
        with self._replacing:
            self.restarting.set()
            try:
                kill()
                self._retire_jobmanager()
                self.restarts += 1
                self.cluster.jobmanager = self.cluster.new_jobmanager()
                self.cluster.jobmanager.start()
                try:
                    self.start()
                except (BadInput, NotReady) as error:
                    self.history.record("driver.start_failed", restart=self.restarts, detail=str(error)[:300])
            finally:
                self.restarting.clear()

    def _retire_jobmanager(self) -> None:
        manager = self.cluster.jobmanager
        manager.save_log(self.logs, f"{manager.alias}.{self.restarts}.log")
        manager.remove()
        self.history.record("container.remove", container=manager.alias)

    def retire(self) -> None:
        """Stop the job with a savepoint (its last transactions committed), keep the JobManager's and
        TaskManagers' logs; the session cluster stays for the next scenario."""
        if self.jobs:
            graceful = self.cluster.jobmanager.stop_job(self.jobs[-1])
            self.history.record("job.stop", job=self.jobs[-1], savepoint=graceful)
        for service in (self.cluster.jobmanager, *self.cluster.taskmanagers):
            service.save_log(self.logs)

    def check(self, batch: int | None) -> dict | None:
        """None while the job runs or restarts; once Flink gave up on it, why (the sink's crash loop)."""
        if self.restarting.is_set() or not self.jobs:
            return None
        job = self.jobs[-1]
        if self.cluster.jobmanager.job_state(job) not in GONE or self.restarting.is_set():
            return None
        cause = self.cluster.jobmanager.job_failure(job)
        self.failures.append(self.history.record("query.failed", exception=cause.split(":")[0], message=cause,
                                                 batch=batch, container=self.cluster.jobmanager.alias,
                                                 failure=len(self.failures) + 1, detail=cause))
        last = self.failures[-1]
        return {"reason": f"the job failed after Flink's own restarts: {cause}", "anomaly": CRASH_LOOP,
                "failures": [{k: last[k] for k in ("t", "exception", "message", "batch", "failure")}]}
