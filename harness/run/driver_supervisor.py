"""The scenario's Spark driver over its life: started, replaced on the same checkpoint when the nemesis
kills it, retired with its log kept; a driver that fails to load the user's code is bad input."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

from harness.cluster.spark import SparkDriver
from harness.cluster.topology import Cluster
from harness.errors import BadInput, NotReady
from harness.history import History

SPECULATED = re.compile(r"^.*TaskSetManager: Marking task .* as speculatable.*$", re.M)  # Spark's own line

class DriverSupervisor:
    """One spark-submit at a time with the same arguments; `restarts` counts the replacements."""

    def __init__(self, cluster: Cluster, name: str, args: list[str], history: History, logs: Path,
                 pipeline: str, sink: str) -> None:
        self.cluster = cluster
        self.name = name
        self.args = args
        self.history = history
        self.logs = logs
        self.pipeline, self.sink = pipeline, sink  # named when the driver cannot load them
        self.driver: SparkDriver | None = None
        self.restarts = 0
        self.restarting = threading.Event()
        self._replacing = threading.Lock()  # two kills at once: the second waits for the first's driver

    def start(self) -> None:
        """Start the driver until its query runs."""
        self.driver = self.cluster.new_driver(self.name, self.args)
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
            raise error
        self.history.record("container.start", container=self.driver.alias, role="driver", restart=self.restarts)

    def current(self) -> SparkDriver:
        assert self.driver is not None
        return self.driver

    def replace(self, kill: Callable[[], None]) -> None:
        """Kill the driver and start a new spark-submit on the same checkpoint (called by the nemesis).
        Replacements take turns: a kill while one runs then kills the driver that replaced it."""
        with self._replacing:
            self.restarting.set()
            try:
                kill()
                self.retire()
                self.restarts += 1
                self.start()
            finally:
                self.restarting.clear()

    def retire(self) -> None:
        """Remove the driver, keeping its log (`driver.N.log` for the Nth replacement)."""
        if self.driver is None:
            return
        suffix = f".{self.restarts}" if self.restarts else ""
        self.driver.save_log(self.logs, f"{self.driver.alias}{suffix}.log")
        copies = SPECULATED.findall(self.driver.log_text())
        if copies:  # evidence for the judge that a task's two attempts ran at once
            self.history.record("speculation", copies=len(copies), first=copies[0].strip())
        self.cluster.remove_driver(self.driver)
        self.history.record("container.remove", container=self.driver.alias)
        self.driver = None

    def exited(self) -> str | None:
        """Why the driver is gone (its last lines), or None while it runs or is being replaced."""
        if self.restarting.is_set() or self.driver is None:
            return None
        self.driver.reload()
        if self.driver.status in ("running", "paused"):
            return None
        return f"the driver exited: {self.driver.log_tail(5)}"
