"""The history: an append-only JSON-lines log of every event of a scenario, with timestamps.

Sends, batches planned and committed, container starts and stops, faults and heals, the reader's
result: the report's timeline and a later audit are built from this file alone.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from harness.evidence import unwritable

# made once: json.dumps with options makes an encoder per call, and a run records an event per send
ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)


class History:
    """Thread-safe appender; each event is `{"t": unix seconds, "type": ..., **fields}`, handed to the
    system as it is recorded (line-buffered), so a harness killed with SIGKILL loses none."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", buffering=1)
        except OSError as error:
            raise unwritable(path, error) from None
        self.path = path
        self._lock = threading.Lock()

    def record(self, type: str, **fields: Any) -> dict[str, Any]:
        event = {"t": round(time.time(), 4), "type": type, **fields}
        line = ENCODER.encode(event)
        with self._lock:
            self._file.write(line + "\n")
        return event

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_history(path: Path, types: Collection[str] = (), leave_out: Collection[str] = ()) -> list[dict[str, Any]]:
    """The events of a history file in order: of `types` (all when empty), but not of `leave_out`.
    Filtered line by line: a million sends read back at once held 900 MB."""
    with path.open() as lines:
        events = (json.loads(line) for line in lines if line.strip())
        return [e for e in events if (not types or e["type"] in types) and e["type"] not in leave_out]
