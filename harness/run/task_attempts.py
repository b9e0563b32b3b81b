"""The attempts of Spark tasks that ran more than once (a retry after a failure, a speculative copy, a
task re-run after its executor was lost), from the driver's log: where each ran, from when to when, and
how it ended. A task that ran once is left out: a scenario runs thousands of them.

Spark's TaskSetManager logs each attempt (`Starting task 2.1 in stage 5.0 (TID 23) (spark-worker-2,
executor 0, ...)`) and its end (`Finished task ...`, `Lost task ...`); its timestamps have whole seconds.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

STAMP = r"^(?P<stamp>\d\d/\d\d/\d\d \d\d:\d\d:\d\d) \w+ TaskSetManager: "
TASK = r"task (?P<task>\d+)\.(?P<attempt>\d+) in stage (?P<stage>[\d.]+) \(TID (?P<tid>\d+)\)"
STARTED = re.compile(STAMP + "Starting " + TASK + r" \((?P<host>[^,]+), ?executor (?P<executor>[^,]+),", re.M)
FINISHED = re.compile(STAMP + "Finished " + TASK, re.M)
LOST = re.compile(STAMP + "Lost " + TASK + r"(?: \([^)]*\))?(?:: (?P<reason>.*))?$", re.M)


def task_attempts(log: str) -> list[dict]:
    """Every attempt of each task that had several, in the order they started."""
    attempts: dict[str, dict] = {}
    for match in STARTED.finditer(log):
        attempts[match["tid"]] = {"t": _seconds(match["stamp"]), "stage": match["stage"], "task": int(match["task"]),
                                  "attempt": int(match["attempt"]), "tid": int(match["tid"]),
                                  "container": match["host"].strip(), "executor": match["executor"].strip(),
                                  "ended": None, "outcome": "running"}
    for pattern, outcome in ((FINISHED, "finished"), (LOST, "lost")):
        for match in pattern.finditer(log):
            attempt = attempts.get(match["tid"])
            if attempt is not None:
                reason = (match.groupdict().get("reason") or "").strip()
                attempt.update(ended=_seconds(match["stamp"]), outcome=f"{outcome}: {reason}" if reason else outcome)
    counts: dict[tuple[str, int], int] = {}
    for attempt in attempts.values():
        counts[(attempt["stage"], attempt["task"])] = counts.get((attempt["stage"], attempt["task"]), 0) + 1
    return [a for a in attempts.values() if counts[(a["stage"], a["task"])] > 1]


def _seconds(stamp: str) -> float:
    """A log4j timestamp (yy/MM/dd HH:mm:ss, the containers' clock is UTC) as unix seconds."""
    return datetime.strptime(stamp, "%y/%m/%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
