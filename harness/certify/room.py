"""How many clusters an engine has the memory for, measured, never assumed: a cluster's peak is read from
the engine (each container's highest memory use since it started, summed over a run's containers)
and kept per engine and cluster shape, so that the next run knows it before its first cluster starts;
the memory free is the host's (a local engine) or the engine's total less what its containers use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from docker.errors import APIError, NotFound

from harness.cluster.engine import docker_client, engine_socket_url
from harness.cluster.images import cache_dir
from harness.cluster.labels import RUN
from harness.evidence import write_evidence

MARGIN = 1.25  # a fault scenario may need more than the baseline measured (a restarted driver, a copy of a task)
RESERVE_BYTES = 2 * 2**30  # left free for the harness itself and whatever else runs on the machine
MEMINFO = Path("/proc/meminfo")


def clusters_that_fit(available: int | None, peak: int | None, wanted: int, running: int = 0) -> int:
    """How many clusters to run (at most `wanted`, at least the `running` ones and one): as many more as
    `available` bytes hold at `peak` bytes each, with a margin and a reserve left free. Unknown: no more."""
    if available is None or not peak:
        return max(running, 1)
    more = max(0, int((available - RESERVE_BYTES) // (peak * MARGIN)))
    return max(running, 1, min(wanted, running + more))


def gib(size: int | None) -> str:
    return "unknown" if size is None else f"{size / 2**30:.1f} GiB"


def cluster_peak(run_id: str) -> int | None:
    """The highest memory use of a run's containers, summed (None when the engine does not keep a
    container's maximum: cgroup v2 reports only its current use)."""
    total = 0
    for container in docker_client().containers.list(filters={"label": f"{RUN}={run_id}"}):
        try:
            memory = container.stats(stream=False, one_shot=True).get("memory_stats", {})
        except (NotFound, APIError):  # a driver removed between list and stats
            continue
        if not memory.get("max_usage"):
            return None
        total += memory["max_usage"]
    return total or None


def available_memory() -> int | None:
    """Bytes free for more clusters: the host's available memory when the engine is local (a unix socket),
    else the engine's total less what its running containers use."""
    if urlsplit(engine_socket_url()).scheme in ("unix", "npipe") and MEMINFO.is_file():
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    client = docker_client()
    used = 0
    for container in client.containers.list():
        try:
            used += container.stats(stream=False, one_shot=True).get("memory_stats", {}).get("usage", 0)
        except (NotFound, APIError):
            continue
    return int(client.info()["MemTotal"]) - used


class PeakStore:
    """The last measured peak of a cluster per engine and shape (`shape_key`), in the harness's cache."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / "cluster-peaks.json"

    def _read(self) -> dict[str, int]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def known(self, key: str) -> int | None:
        return self._read().get(key)

    def remember(self, key: str, peak: int) -> None:
        peaks = self._read()
        peaks[key] = peak
        write_evidence(self.path, json.dumps(peaks, indent=1, sort_keys=True))  # atomic: workers read it too


def shape_key(engine: str, brokers: int) -> str:
    """The key a certification's cluster's peak is kept under: its engine and Kafka brokers."""
    return f"{engine} brokers={brokers}"


@dataclass
class Sizing:
    """`certify --quick`'s default spread on one engine: the clusters that shorten the plan, as many as its
    memory holds. The second starts with the baseline when a cluster's peak is known from an earlier run
    (its start then overlaps the baseline), else once the baseline's cluster was measured."""

    key: str  # the engine and cluster shape (`shape_key`)
    store: PeakStore = field(default_factory=PeakStore)
    notes: list[str] = field(default_factory=list)  # how it decided, for the console and the certificate

    def at_start(self) -> int:
        """Clusters to start with the baseline: two when a known peak fits, else one."""
        known, free = self.store.known(self.key), available_memory()
        count = clusters_that_fit(free, known, 2)
        self.notes.append(f"at the start: {count} cluster(s); a cluster's peak {gib(known)} (from an earlier run on "
                          f"this engine), {gib(free)} available")
        return count

    def after_baseline(self, run_id: str, running: int, wanted: int) -> int:
        """Clusters for the rows (`wanted` by the plan), the first cluster's peak measured and remembered."""
        peak, free = cluster_peak(run_id), available_memory()
        if peak:
            self.store.remember(self.key, peak)
        count = clusters_that_fit(free, peak, wanted, running)
        self.notes.append(f"for the rows: {count} cluster(s) of the {wanted} the plan wants; the baseline's cluster "
                          f"peaked at {gib(peak)} (measured), {gib(free)} available")
        return count

