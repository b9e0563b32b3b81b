"""Holds the driver at a table's commit point, for the harness to decide what happens there.

A table format commits on the driver: the JVM puts a version's file into place (Delta's
`_delta_log/<version>.json`, Iceberg's `metadata/v<version>.metadata.json`, Paimon's
`snapshot/snapshot-<id>`), then returns to Spark, which writes the checkpoint's `commits/<batch>` soon
after (milliseconds). No poll from outside lands a fault in that window, so a process beside the driver
watches the folder with inotify (and lists it every 10 ms, should an event be missed), stops the
driver's JVM with SIGSTOP the moment a new version appears, and says so in the holds folder
(`<holds>/<token>-<version>.held`). The harness reads it through the relay, fires whatever fault the
point triggers (a killed driver dies held: the crash of apache/paimon#9666), then answers
`<token>-<version>.release`, and the JVM goes on (SIGCONT). A harness that never answers does not stall
the stream for longer than RELEASE_AFTER_S.

Out of the sink's reach: the harness starts it in the driver's container as root (an exec of its own,
harness.cluster.spark.SparkDriver), where Spark and the sink run as an unprivileged user that can neither
signal it nor write its holds folder (root's, in a root-owned folder of the volume). It finds the JVM by
what the kernel says, never by a command line: the first child of the container's init (the sink's
orphans are the init's later children). It also writes down each `commits/<batch>` of Spark's commit log
the moment it appears (`<holds>/<token>.commits`, one batch per line), so that a sink that renames the
commit log's files cannot hide that its batch was committed while held. When it is watching, it writes
`<token>.ready` (`ok`, or why it cannot hold): the app starts its query only then.

    python3 -m harness.driver.table_hold FOLDER PATTERN HOLDS TOKEN COMMITS

PATTERN is a version file's name as a regular expression, its version the first group (ASCII digits: the
store's harness.output.base.Hold says it). COMMITS is the query's `<checkpoint>/commits` folder.
Standard library only; Linux's inotify through ctypes.
"""

from __future__ import annotations

import ctypes
import os
import re
import select
import signal
import struct
import sys
import time

# The harness's holds (root's folder on the run's volume, whose root is sticky: Spark's user can read it but
# can neither write, rename nor replace it); harness.cluster.spark mounts that volume at /checkpoints
HOLDS = "/checkpoints/.holds"
IN_CLOSE_WRITE, IN_MOVED_TO = 0x00000008, 0x00000080
EVENT_HEAD = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
POLL_S = 0.01
RELEASE_AFTER_S = 60.0
FIND_JVM_S = 10.0
BATCH_FILE = re.compile(r"^([0-9]+)$")  # a file of Spark's commit log: the batch id


class CommitHold:
    """Stops `pid` (the driver's JVM) at each new version of the table's log until the harness answers, and
    writes down each batch of Spark's commit log as it appears."""

    def __init__(self, folder: str, pattern: str, holds: str, token: str, commits: str, pid: int) -> None:
        self.log = folder.rstrip("/")
        self.pattern = re.compile(pattern)
        self.holds = holds
        self.token = token  # the driver's: a restarted one is answered afresh
        self.commits = commits.rstrip("/")
        self.pid = pid
        self.libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self.libc.inotify_init1(0)
        self.watched: dict[int, str] = {}  # watch descriptor -> folder
        self.seen: set[int] = set()
        self.journaled: set[int] = set()

    def run(self) -> None:
        if self.fd < 0:
            return say_ready(self.holds, self.token, f"inotify: errno {ctypes.get_errno()}")
        self.watch()  # before `ok`: a version written once the app hears it is new, never taken as found
        say_ready(self.holds, self.token, "ok")
        while True:  # woken by the folders' events, and every POLL_S in case one is missed
            self.wait()
            if self.log in self.watched.values():
                for version in new_versions(self.log, self.pattern, self.seen):
                    self.seen.add(version)
                    self.hold(version)

    def wait(self) -> None:
        """Up to POLL_S for the folders' events, the commit log's batches written down as they come (while
        a version is held too: a sink that lets its JVM go on is seen committing)."""
        self.watch()
        if select.select([self.fd], [], [], POLL_S)[0]:
            self.journal(names_in(os.read(self.fd, 65536), self.watched, self.commits))
        if self.commits in self.watched.values():
            self.journal(new_versions(self.commits, BATCH_FILE, self.journaled))

    def watch(self) -> None:
        """Watch each folder once it exists (the first write makes it). The versions a log has when first
        watched are not held: the table's first version, or a restarted driver's table as it found it."""
        for folder in (self.log, self.commits):
            if folder not in self.watched.values() and os.path.isdir(folder):
                wd = self.libc.inotify_add_watch(self.fd, folder.encode(), IN_CLOSE_WRITE | IN_MOVED_TO)
                if wd >= 0:
                    self.watched[wd] = folder
                    if folder == self.log:
                        self.seen.update(new_versions(folder, self.pattern, set()))

    def journal(self, batches: list[int]) -> None:
        """Write the commit log's batches down at once (before anything can rename them), the record whole
        each time: a reader never finds it half written."""
        fresh = [batch for batch in batches if batch not in self.journaled]
        if fresh:
            self.journaled.update(fresh)
            record = f"{self.holds}/{self.token}.commits"
            with open(record + ".part", "w") as file:
                file.write("".join(f"{batch}\n" for batch in sorted(self.journaled)))
            os.replace(record + ".part", record)

    def hold(self, version: int) -> None:
        os.kill(self.pid, signal.SIGSTOP)
        try:
            said = f"{self.holds}/{self.token}-{version}"
            with open(said + ".part", "w") as file:
                file.write(str(version))
            os.replace(said + ".part", said + ".held")
            deadline = time.monotonic() + RELEASE_AFTER_S
            while not os.path.exists(said + ".release") and time.monotonic() < deadline:
                self.wait()
        finally:
            os.kill(self.pid, signal.SIGCONT)


def names_in(events: bytes, watched: dict[int, str], folder: str) -> list[int]:
    """The batches named by inotify events on `folder` (a file renamed into Spark's commit log)."""
    batches, at = [], 0
    while at + EVENT_HEAD.size <= len(events):
        wd, _, _, length = EVENT_HEAD.unpack_from(events, at)
        name = events[at + EVENT_HEAD.size:at + EVENT_HEAD.size + length].rstrip(b"\0").decode(errors="replace")
        at += EVENT_HEAD.size + length
        if watched.get(wd) == folder and (found := BATCH_FILE.match(name)):
            batches.append(int(found[1]))
    return batches


def new_versions(folder: str, pattern: re.Pattern[str], seen: set[int]) -> list[int]:
    """The versions in the folder not seen yet, in order (none while it does not exist)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    found = (pattern.match(name) for name in names)
    return sorted(v for v in (int(m[1]) for m in found if m) if v not in seen)


def first_child_of_init(proc: str = "/proc") -> int | None:
    """The container's command (the driver's JVM, which spark-submit's scripts exec): the child of PID 1
    that started first, by the kernel's own `stat` of each process (a process can rename itself, not
    change its parent or start time)."""
    children = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat") as file:
                fields = file.read().rpartition(")")[2].split()  # after the command's name, which may hold spaces
        except OSError:  # gone meanwhile
            continue
        if fields[1] == "1":  # ppid; fields[19] is the start time, in clock ticks since boot
            children.append((int(fields[19]), int(entry)))
    return min(children)[1] if children else None


def say_ready(holds: str, token: str, said: str) -> None:
    """`<token>.ready`: `ok` once the hold watches, or why it cannot hold (the app fails on it)."""
    os.makedirs(holds, mode=0o755, exist_ok=True)
    with open(f"{holds}/{token}.part", "w") as file:
        file.write(said)
    os.replace(f"{holds}/{token}.part", f"{holds}/{token}.ready")


def main(folder: str, pattern: str, holds: str, token: str, commits: str) -> None:
    deadline = time.monotonic() + FIND_JVM_S  # started as the container starts: its init may not have forked yet
    while (pid := first_child_of_init()) is None:
        if time.monotonic() > deadline:
            return say_ready(holds, token, "no process but the init in the driver's container")
        time.sleep(POLL_S)
    CommitHold(folder, pattern, holds, token, commits, pid).run()


if __name__ == "__main__":
    main(*sys.argv[1:6])
