"""The scenario's Spark driver over its life: started, replaced on the same checkpoint when the nemesis
kills it, retired with its log kept; a driver that fails to load the user's code is bad input.

It is also the deployment's supervisor (`spark-submit --supervise`, a job's retries, an operator's
restart policy): a query that fails on its own (Spark's answer to a sink's error) is started again on
its checkpoint after a back-off, up to `restarts` times. A driver the nemesis kills is not such a
failure, even when the supervisor sees it dead before the nemesis's replacement begins: it is replaced
once, at once, and counts against no restart. When restarts run out the query is in a crash
loop, and with none allowed a failed query is final: both are the sink's failure, never an unknown. A
query that fails importing a module as its first batch runs (the sink imports it then) is bad input
instead: no fault makes a module go missing, and the user is told what the Spark image has. Once a batch
ran, or after a fault, an import failure is the sink's own (it may raise one to dodge a verdict).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.cluster.spark import SparkDriver, Submit
from harness.cluster.topology import Cluster
from harness.errors import BadInput, HarnessError, NotReady
from harness.history import History
from harness.output.base import Hold
from harness.run.event_log import TaskEvents, described
from harness.run.query_failure import QueryFailure, query_failure
from harness.versions import image_python_requirements

CRASH_LOOP = "crash_loop"  # the anomaly when restarts run out
QUERY_FAILED = "query_failed"  # the anomaly when no restart is allowed
IMPORT_FAILURES = ("ModuleNotFoundError", "ImportError")


def image_packages() -> str:
    """The Python packages a sink can import in the Spark image, by name."""
    names = [re.split(r"[\[=<>]", requirement)[0] for requirement in image_python_requirements()]
    return ", ".join(["pyspark", "delta-spark", *names])


def backoff_s(failures: int) -> float:
    """Seconds before the nth restart of a failed query: doubling from 2 s, at most 30 s (as job
    schedulers and restart policies back off)."""
    return min(2.0 * 2 ** (failures - 1), 30.0)


class DriverSupervisor:
    """One spark-submit at a time with the same arguments; `restarts` counts the replacements (the
    nemesis's and the supervisor's), `failures` the query's own failures."""

    def __init__(self, cluster: Cluster, name: str, args: list[str], history: History, logs: Path,
                 pipeline: str, sink: str, max_restarts: int = 3, submit: Submit = Submit(),
                 hold: Hold | None = None) -> None:
        """`submit`: what every spark-submit adds for the sink (its dependencies' folder, its settings);
        `hold`: the table commits each driver is held at."""
        self.cluster = cluster
        self.name = name
        self.args = args
        self.submit = submit
        self.hold = hold
        self.history = history
        self.logs = logs
        self.pipeline, self.sink = pipeline, sink  # named when the driver cannot load them
        self.max_restarts = max_restarts
        self.driver: SparkDriver | None = None
        self.restarts = 0
        self.failures: list[dict] = []  # query.failed events, in order
        self.restarting = threading.Event()
        self._replacing = threading.Lock()  # two kills at once: the second waits for the first's driver

    def start(self) -> None:
        """Start the driver until its query runs."""
        submitted = time.time()
        self.driver = self.cluster.new_driver(self.name, self.args, self.submit, self.hold)
        try:
            self.driver.start()
        except NotReady as error:
            log = self.driver.log_text()
            pipeline_error = re.search(r"^HARNESS-PIPELINE-ERROR (.*)$", log, re.M)
            if pipeline_error:
                raise BadInput(f"pipeline '{self.pipeline}': {pipeline_error.group(1)[:300]}") from None
            query_error = re.search(r"^HARNESS-QUERY-ERROR (.*)$", log, re.M)
            if query_error:
                raise BadInput(f"pipeline '{self.pipeline}' with sink '{self.sink}': {query_error.group(1)[:300]}") \
                    from None
            sink_error = re.search(r"^HARNESS-SINK-ERROR (.*)$", log, re.M)
            if sink_error:
                raise BadInput(f"sink '{self.sink}' failed at start: {sink_error.group(1)}") from None
            failure = re.search(r"^\w*(ImportError|ModuleNotFoundError|AttributeError)[^\n]*", log, re.M)
            if failure:
                raise BadInput(f"pipeline '{self.pipeline}' or sink '{self.sink}' failed to load in the driver: "
                               f"{failure.group(0)}") from None
            raise NotReady(f"{error}; the driver's cause: {query_failure(log)}") from None
        times = {"submitted": round(submitted, 3), "running": self.driver.started_at(),
                 "session": self.driver.session_ready_at()}  # where its start went (harness.run.phases)
        self.history.record("container.start", container=self.driver.alias, role="driver", restart=self.restarts,
                            **{name: t for name, t in times.items() if t is not None})

    def current(self) -> SparkDriver:
        assert self.driver is not None
        return self.driver

    def replace(self, kill: Callable[[], None]) -> None:
        """End the driver with `kill` (the nemesis's kill, or the supervisor's back-off for a driver that
        already exited) and start a new spark-submit on the same checkpoint. Replacements take turns: a
        kill while one runs then kills the driver that replaced it. Only the first driver's failure to
        load the sink is bad input: a later one (an import that fails after a fault, a marker the sink
        prints) is the query's failure, which `check` counts against the restarts."""
        with self._replacing:
            self.restarting.set()
            try:
                kill()
                self.retire()
                self.restarts += 1
                try:
                    self.start()
                except BadInput as error:  # the sink ran before: what a later driver says of it is its failure
                    self.history.record("driver.start_failed", restart=self.restarts, detail=str(error)[:300])
            finally:
                self.restarting.clear()

    def retire(self) -> None:
        """Remove the driver, keeping its log (`driver.N.log` for the Nth replacement)."""
        if self.driver is None:
            return
        suffix = f".{self.restarts}" if self.restarts else ""
        self.driver.save_log(self.logs, f"{self.driver.alias}{suffix}.log")
        tasks = self._task_events(self.driver)
        if tasks.speculative:  # evidence for the judge that a task's two attempts ran at once
            self.history.record("speculation", copies=len(tasks.speculative), first=described(tasks.speculative[0]))
        for attempt in tasks.repeated():  # at the time Spark started it (its event log's)
            self.history.record("task.attempt", **attempt)
        self.cluster.remove_driver(self.driver)
        self.history.record("container.remove", container=self.driver.alias)
        self.driver = None

    def _task_events(self, driver: SparkDriver) -> TaskEvents:
        """What the driver's event log says of its tasks (nothing when the relay is gone: the run is ending)."""
        tasks = TaskEvents()
        files = self.cluster.files
        try:
            for name in files.walk(driver.event_log) if files is not None else ():
                tasks.read(files.read_bytes(f"{driver.event_log}/{name}"))
        except (OSError, ValueError) as error:  # refused (too large, not a file) or unreachable: said, not fatal
            self.history.record("event_log.unread", container=driver.alias, detail=str(error)[:200])
        return tasks

    def check(self, batch: int | None) -> dict | None:
        """None while the query runs, or once it was restarted after failing on its own (`batch`: the batch
        it was running). When it cannot go on (restarts ran out, or none are allowed), why: the anomaly,
        the failures and a reason that quotes the query's exception."""
        driver = self.driver
        if self.restarting.is_set() or driver is None:
            return None
        driver.reload()
        if driver.status in ("running", "paused"):
            return None
        if self.restarting.is_set() or driver is not self.driver:
            return None  # the nemesis's kill, landed as this looked: its replacement restarts the query, at once
        failure = query_failure(driver.log_text())
        if failure.exception.rsplit(".", 1)[-1] in IMPORT_FAILURES and not (batch or self.restarts or self.failures):
            raise BadInput(f"sink '{self.sink}' or pipeline '{self.pipeline}' failed importing in the Spark image: "
                           f"{failure} (its Python packages: {image_packages()}; ship pure-Python modules with "
                           "the sink as a zipped package)")
        while True:
            self._failed(failure, batch)
            if len(self.failures) > self.max_restarts:
                return self._stop()
            failure = self._restart()
            if failure is None:
                return None

    def _failed(self, failure: QueryFailure, batch: int | None) -> None:
        self.failures.append(self.history.record("query.failed", **failure.fields(), batch=batch,
                                                 container=self.driver.alias if self.driver else None,
                                                 failure=len(self.failures) + 1, detail=str(failure)))

    def _restart(self) -> QueryFailure | None:
        """Start the query again on its checkpoint after the back-off (a replacement whose old driver has
        already exited); the failure if it did not start."""
        seconds = backoff_s(len(self.failures))

        def back_off() -> None:
            time.sleep(seconds)
            self.history.record("query.restart", failure=len(self.failures), backoff_s=seconds,
                                detail=f"restart {len(self.failures)} of {self.max_restarts} after {seconds:g} s")

        try:
            self.replace(back_off)
        except HarnessError as error:  # it failed again before its query ran: one more failure
            return QueryFailure(type(error).__name__, str(error)[:300])
        return None

    def _stop(self) -> dict:
        anomaly = CRASH_LOOP if self.max_restarts else QUERY_FAILED
        last = self.failures[-1]
        cause = f"{last['exception']}: {last['message']}" if last["message"] else last["exception"]
        if anomaly == CRASH_LOOP:
            reason = f"the query failed {len(self.failures)} times ({self.max_restarts} restarts): {cause}"
        else:
            reason = f"the query failed (restarts are off): {cause}"
        return {"reason": reason, "anomaly": anomaly,
                "failures": [{k: f[k] for k in ("t", "exception", "message", "batch", "failure")}
                             for f in self.failures]}
