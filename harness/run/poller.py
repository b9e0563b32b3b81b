"""The loop the run's watchers share (the checkpoint's batches, the brokers' leaders, a table's versions,
PostgreSQL's held commits): a daemon thread that waits `interval` s, then polls, until stopped. An error
in a poll ends the thread, as it ended each watcher's own."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Poller:
    """Calls `poll` every `interval` s in a daemon thread named `name`, from start() until stop()."""

    def __init__(self, name: str, interval: float, poll: Callable[[], None]) -> None:
        self._interval = interval
        self._poll = poll
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Ends the loop and waits for the poll under way (at most `timeout` s); nothing to wait for if never
        started."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._poll()
