"""Holds the driver at a table's commit point, for the harness to decide what happens there.

A table format commits on the driver: the JVM puts a version's file into place (Delta's
`_delta_log/<version>.json`, Iceberg's `metadata/v<version>.metadata.json`, Paimon's
`snapshot/snapshot-<id>`), then returns to Spark, which writes the checkpoint's `commits/<batch>` soon
after (milliseconds). No poll from outside lands a fault in that window, so a process beside the driver
watches the folder with inotify (and lists it every 10 ms, should an event be missed), stops the
driver's JVM with SIGSTOP the moment a new version appears, and says so in the holds folder
(`<holds>/<token>-<version>.held`). The
harness reads it through the relay, fires whatever fault the point triggers (a killed driver dies
held: the crash of apache/paimon#9666), then answers `<token>-<version>.release`, and the JVM goes on
(SIGCONT). A harness that never answers does not stall the stream for longer than RELEASE_AFTER_S.

A process of its own, not a thread of the Python driver: nothing in pyspark's process (its threads,
its output piped through the stopped JVM) can delay it. The JVM must not be its container's PID 1,
which ignores SIGSTOP sent from inside (harness.cluster.spark runs the driver under the engine's
init). Standard library only; Linux's inotify through ctypes.

    python3 -m harness.driver.table_hold FOLDER PATTERN HOLDS JVM_PID

PATTERN is a version file's name as a regular expression, its version the first group (ASCII digits: the
store's harness.output.base.Hold says it).
"""

from __future__ import annotations

import ctypes
import os
import re
import select
import signal
import sys
import time
import uuid

IN_CLOSE_WRITE, IN_MOVED_TO = 0x00000008, 0x00000080
POLL_S = 0.01
RELEASE_AFTER_S = 60.0


class CommitHold:
    """Stops `pid` (the driver's JVM) at each new version of the table's log until the harness answers."""

    def __init__(self, folder: str, pattern: str, holds: str, pid: int) -> None:
        self.log = folder.rstrip("/")
        self.pattern = re.compile(pattern)
        self.holds = holds
        self.pid = pid
        self.token = uuid.uuid4().hex[:8]  # this driver's: a restarted one is answered afresh

    def run(self) -> None:
        if self.pid == 1:  # SIGSTOP would be ignored: say so rather than pretend to hold
            print("HARNESS-HOLD-ERROR the JVM is PID 1 of its container: table commits cannot be held", flush=True)
            return
        while not os.path.isdir(self.log):  # the first write makes the folder (its first version is not held)
            time.sleep(POLL_S)
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        fd = libc.inotify_init1(0)
        if fd < 0 or libc.inotify_add_watch(fd, self.log.encode(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0:
            print(f"HARNESS-HOLD-ERROR inotify: errno {ctypes.get_errno()}", flush=True)
            return
        seen = set(new_versions(self.log, self.pattern, set()))
        os.makedirs(self.holds, exist_ok=True)
        while True:  # woken by the log's events, and every POLL_S in case one is missed
            if select.select([fd], [], [], POLL_S)[0]:
                os.read(fd, 65536)
            for version in new_versions(self.log, self.pattern, seen):
                seen.add(version)
                self.hold(version)

    def hold(self, version: int) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        try:
            said = f"{self.holds}/{self.token}-{version}"
            with open(said + ".part", "w") as file:
                file.write(str(version))
            os.replace(said + ".part", said + ".held")
            deadline = time.monotonic() + RELEASE_AFTER_S
            while not os.path.exists(said + ".release") and time.monotonic() < deadline:
                time.sleep(POLL_S)
        finally:
            os.kill(self.pid, signal.SIGCONT)


def new_versions(folder: str, pattern: re.Pattern[str], seen: set[int]) -> list[int]:
    """The versions in the folder not seen yet, in order."""
    found = (pattern.match(name) for name in os.listdir(folder))
    return sorted(v for v in (int(m[1]) for m in found if m) if v not in seen)


if __name__ == "__main__":
    CommitHold(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])).run()
