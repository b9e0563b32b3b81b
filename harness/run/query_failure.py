"""Why a driver exited on its own, in one line: the query's exception as the user's code raised it.

The app runner prints `HARNESS-QUERY-FAILED {"message": ..., "last_batch": ...}` when its query ends with
Spark's StreamingQueryException. Spark wraps an exception raised in Python (a foreachBatch function, a
partition writer) in its own text, with the Python traceback inside; its last line, the one a user
would quote (`confluent_kafka.KafkaException: KafkaError{code=_FENCED,...}`), is the cause. A driver
that exited without that line (the JVM died, the app called exit) is quoted by its last traceback line,
else its log's last line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

FAILED = re.compile(r"^HARNESS-QUERY-FAILED (.*)$", re.M)
STREAM_FAILED = re.compile(r"^\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: ", re.M)
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.$]*(?:Error|Exception|Exit|Interrupt|Fault|Timeout))\b:? ?(.*)$")
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class QueryFailure:
    """The exception's class and its message (one line), and the last batch the query completed."""

    exception: str
    message: str
    last_batch: int | None = None

    def __str__(self) -> str:
        return f"{self.exception}: {self.message}" if self.message else self.exception

    def fields(self) -> dict:
        return {"exception": self.exception, "message": self.message, "last_batch": self.last_batch}


def query_failure(log: str) -> QueryFailure:
    """The failure a driver's log shows (its last query failure, else its last traceback or line)."""
    found = FAILED.findall(log)
    if found:
        try:
            said = json.loads(found[-1])
        except json.JSONDecodeError:
            said = {"message": found[-1]}
        return _from_text(str(said.get("message", "")), said.get("last_batch"))
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return _traceback_cause(log, None) or QueryFailure("DriverExited", _short(lines[-1] if lines else ""))


def _traceback_cause(text: str, last_batch: int | None) -> QueryFailure | None:
    """The exception line that ends the last Python traceback in `text`, if there is one."""
    traceback = text.rsplit("Traceback (most recent call last):", 1)
    if len(traceback) == 2:
        for line in traceback[1].splitlines():
            if line.strip() and not line[0].isspace():
                match = EXCEPTION_LINE.match(line.strip())
                if match:
                    return QueryFailure(match.group(1), _short(match.group(2)), last_batch)
    return None


def _from_text(text: str, last_batch: int | None) -> QueryFailure:
    """The cause in a Spark exception's text: the last Python traceback's exception line, else the first
    line that names an exception, else the first line."""
    cause = _traceback_cause(text, last_batch)
    if cause is not None:
        return cause
    body = STREAM_FAILED.sub("", text)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    for line in lines:
        match = EXCEPTION_LINE.match(line)
        if match:
            return QueryFailure(match.group(1), _short(match.group(2)), last_batch)
    return QueryFailure("StreamingQueryException", _short(lines[0] if lines else ""), last_batch)


def _short(message: str) -> str:
    return message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + "..."
