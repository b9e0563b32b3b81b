"""Spark's own account of a driver's tasks, from its event log (`spark.eventLog.*`, harness.cluster.spark):
the attempts of each task that ran more than once (a retry after a failure, a speculative copy, a task run
again after its executor was lost), where each ran, from when to when and how it ended; and the speculative
copies Spark launched. Not the driver's log: the sink's stdout is that log, and a line it prints is no
evidence. The log is on the run's volume, written by the driver's JVM, and read after the driver is gone.

Each line is one JSON event (Spark's JsonProtocol). Only task starts and ends are read; a line that is not
one of Spark's (cut short by a killed driver, or anything else) is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

TASK_EVENTS = (b'{"Event":"SparkListenerTaskStart"', b'{"Event":"SparkListenerTaskEnd"')


@dataclass
class TaskEvents:
    """What an event log says of its tasks."""

    attempts: dict[int, dict] = field(default_factory=dict)  # task id -> its attempt
    speculative: list[dict] = field(default_factory=list)  # the speculative copies, as they started

    def read(self, data: bytes) -> None:
        """Add the task events of one event log file."""
        for line in data.splitlines():
            if line.startswith(TASK_EVENTS):
                try:
                    self._event(json.loads(line))
                except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
                    continue  # not an event as Spark writes it

    def _event(self, event: dict) -> None:
        info = event["Task Info"]
        tid = int(info["Task ID"])
        if event["Event"] == "SparkListenerTaskStart":
            attempt = {"t": int(info["Launch Time"]) / 1000, "stage": f"{int(event['Stage ID'])}."
                       f"{int(event['Stage Attempt ID'])}", "task": int(info["Index"]),
                       "attempt": int(info["Attempt"]), "tid": tid, "container": str(info["Host"])[:100],
                       "executor": str(info["Executor ID"])[:20], "ended": None, "outcome": "running"}
            self.attempts[tid] = attempt
            if info.get("Speculative") is True:
                self.speculative.append(attempt)
        elif tid in self.attempts:
            reason = event.get("Task End Reason") or {}
            said = str(reason.get("Reason", "")) if isinstance(reason, dict) else ""
            finished = int(info.get("Finish Time") or 0) / 1000 or None
            self.attempts[tid].update(ended=finished, outcome="finished" if said == "Success" else
                                      f"lost: {said[:100]}" if said else "lost")

    def repeated(self) -> list[dict]:
        """Every attempt of each task that had several, in the order they started (a task that ran once is
        left out: a scenario runs thousands of them)."""
        counts: dict[tuple[str, int], int] = {}
        for attempt in self.attempts.values():
            counts[(attempt["stage"], attempt["task"])] = counts.get((attempt["stage"], attempt["task"]), 0) + 1
        return sorted((a for a in self.attempts.values() if counts[(a["stage"], a["task"])] > 1),
                      key=lambda a: (a["t"], a["tid"]))


def described(attempt: dict) -> str:
    """One attempt as Spark's scheduler names it."""
    return (f"task {attempt['task']}.{attempt['attempt']} in stage {attempt['stage']} (TID {attempt['tid']}) on "
            f"{attempt['container']}, executor {attempt['executor']}")
