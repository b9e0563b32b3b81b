"""Which processes a fault aims at, and whether a signal ended them: read from the kernel's tables, never
from text a process chooses.

`ss -p` prints each holder's name before its pid, and the sink under test chooses its name
(`prctl(PR_SET_NAME, "pid=4000000")`): the first `pid=` in that text can be the sink's. Here the
connection is found in /proc/net/tcp and tcp6 by its ends (its socket inode), and its holders by the
/proc/<pid>/fd links that name that inode; whether they died is `ps`'s pid and state columns. Every
word read is the kernel's.

An executor is a child of its worker's JVM: Spark's standalone Worker starts each executor's JVM itself.
The worker's JVM is the first process the container's init started (the oldest child of PID 1), and a
process the sink starts, however it names itself, is a descendant of an executor or, orphaned, a child of
the init: never a child of the worker's JVM. So executors are found by parentage (`ps`'s pid and ppid
columns), and a command line is only asked of the worker JVM's own children.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

ESTABLISHED = 0x01  # the `st` column of /proc/net/tcp (include/net/tcp_states.h)
# Run in the container: both connection tables, then every process's socket links, one per line.
SNAPSHOT = ("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; "
            "find /proc/[0-9]*/fd -lname 'socket:*' -printf '%p %l\\n' 2>/dev/null")
LINK = re.compile(r"^/proc/(\d+)/fd/\d+ socket:\[(\d+)\]$", re.M)
# Run in the container: every process's pid, parent pid and command line, whole (-ww)
PROCESS_TABLE = ["ps", "-ww", "-eo", "pid=,ppid=,args="]
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
DEAD_STATES = ("Z", "X")  # a zombie has ended (its exit status waits for its parent), unless threads live on


@dataclass(frozen=True)
class Connection:
    """One row of /proc/net/tcp or tcp6."""

    local: tuple[str, int]
    remote: tuple[str, int]
    state: int
    inode: int


def endpoint(text: str) -> tuple[str, int]:
    """(address, port) from the tables' `0100007F:1F90`: the address in 32-bit words of the host's byte
    order (little-endian on every engine the harness runs on), the port in network order; an IPv4
    address mapped into IPv6 (a JVM's dual-stack socket) as the IPv4 address the gate saw."""
    host, _, port = text.partition(":")
    if len(host) not in (8, 32):
        raise ValueError(f"not an address of /proc/net/tcp: {text!r}")
    raw = b"".join(bytes.fromhex(host[i:i + 8])[::-1] for i in range(0, len(host), 8))
    address = ipaddress.ip_address(raw)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address), int(port, 16)


def connections(text: str) -> list[Connection]:
    """Every row of /proc/net/tcp and tcp6 in `text`; headers and any other lines are skipped."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 10 or not re.fullmatch(r"\d+:", fields[0]):
            continue
        try:
            rows.append(Connection(endpoint(fields[1]), endpoint(fields[2]), int(fields[3], 16), int(fields[9])))
        except ValueError:
            continue
    return rows


def holders(snapshot: str, local: tuple[str, int], remote_port: int | None = None) -> list[int]:
    """The pids holding the established connection whose local end is `local` (and whose remote port is
    `remote_port`, when known), from a SNAPSHOT's output, lowest first.

    More than one holds it when a process forked after opening it or passed it on: the kernel does not
    say which of them wrote the request, so a fault aims at them all; a choice among them (the first, the
    parent) is one the sink could steer to a decoy."""
    inodes = {row.inode for row in connections(snapshot)
              if row.state == ESTABLISHED and row.inode and row.local == local
              and (remote_port is None or row.remote[1] == remote_port)}
    return sorted({int(pid) for pid, inode in LINK.findall(snapshot) if int(inode) in inodes})


def executors(table: str) -> list[int]:
    """The pids of the executor JVMs a worker container's PROCESS_TABLE lists: the children of the worker's
    JVM (the lowest pid among the init's children: the first it started) that run Spark's executor backend,
    lowest first. Empty when the container runs none."""
    rows = _rows(table)
    worker = engine_jvm(table)
    if not worker:
        return []
    return sorted(pid for pid, ppid, args in rows if ppid == worker[0] and EXECUTOR_CLASS in args.split())


def engine_jvm(table: str) -> list[int]:
    """The container's own JVM (a Spark worker's, a Flink TaskManager's: the lowest pid among the init's
    children, the first it started) as a list, empty when none runs. A TaskManager runs its tasks in it."""
    under_init = sorted(pid for pid, ppid, _ in _rows(table) if ppid == 1)
    return under_init[:1]


def _rows(table: str) -> list[tuple[int, int, str]]:
    """(pid, ppid, command line) of each line of a PROCESS_TABLE's output."""
    rows = []
    for line in table.splitlines():
        fields = line.split(None, 2)
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
            rows.append((int(fields[0]), int(fields[1]), fields[2] if len(fields) == 3 else ""))
    return rows


def alive(ps: str) -> set[int]:
    """The pids `ps -o pid=,stat= -p ...` lists as not yet ended: a zombie is ended, unless it is a leader
    whose other threads still run (`Zl`: its first thread exited alone)."""
    found = set()
    for line in ps.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and (not fields[1].startswith(DEAD_STATES) or "l" in fields[1]):
            found.add(int(fields[0]))
    return found


def missed(signal: str, pids: Sequence[int], status: int, said: str, survivors: Collection[int]) -> str | None:
    """Why SIG`signal` to `pids` did not end them, or None when every one is gone: the `kill` failed (a pid
    gone before it, so not by this fault) or some process outlived it. Either way the fault did not do
    what it says, and the row is never judged as if it had."""
    if status != 0:
        return f"kill -{signal} {' '.join(map(str, pids))} failed (status {status}): {said.strip()[:200]}"
    if survivors:
        return f"{plural(sorted(survivors))} still alive after SIG{signal}"
    return None


def plural(pids: Sequence[int]) -> str:
    """`pid 7` or `pids 7, 9`: how an effect or an error names its targets."""
    return f"pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}"
