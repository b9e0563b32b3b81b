"""The CPU time this machine spent busy, from the kernel's own count: read before and after a command, it
says how much work the command's containers and processes did, whatever the schedule. On a machine of N
cores a command that kept it busy B CPU seconds cannot take less than B / N seconds: the floor no spread
of rows over clusters can go under."""

from __future__ import annotations

import os
from pathlib import Path

STAT = Path("/proc/stat")
BUSY = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal: all but idle and iowait (guest is in user)


def busy_seconds(stat: Path = STAT) -> float | None:
    """CPU seconds every core spent busy since boot; None where the kernel gives no count (not Linux)."""
    try:
        first = stat.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    ticks = [int(value) for value in first[1:]]
    return sum(ticks[i] for i in BUSY if i < len(ticks)) / os.sysconf("SC_CLK_TCK")


def floor(busy: float, cores: int | None = None) -> str:
    """`busy` CPU seconds in words, with the shortest time they fit in on this machine's cores."""
    cores = cores or os.cpu_count() or 1
    return (f"the machine busy {busy:.0f} CPU s, which on its {cores} cores take at least "
            f"{busy / cores:.0f} s whatever the schedule")
