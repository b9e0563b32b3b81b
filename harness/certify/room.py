"""How many clusters an engine has the memory for, measured, never assumed: a cluster's peak is sampled
from the engine while the baseline runs (the sum over the run's containers, its driver included, of each
one's highest use since it started, or its current use where the engine keeps no maximum) and kept
per engine and cluster shape, so that the next run knows it before its first cluster starts; the
memory free is the host's (a local engine) or the engine's total less what its containers use.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from docker.errors import APIError, NotFound

from harness.cluster.engine import docker_client, engine_socket_url
from harness.cluster.images import cache_dir
from harness.cluster.labels import RUN
from harness.evidence import write_evidence
from harness.progress import say

MARGIN = 1.25  # a fault scenario may need more than the baseline measured (a restarted driver, a copy of a task)
RESERVE_BYTES = 2 * 2**30  # left free for the harness itself and whatever else runs on the machine
MEMINFO = Path("/proc/meminfo")
SAMPLE_S = 2.0  # how often a cluster's memory is read while the baseline runs


def clusters_that_fit(available: int | None, peak: int | None, wanted: int, running: int = 0) -> int:
    """How many clusters to run (at most `wanted`, at least the `running` ones and one): as many more as
    `available` bytes hold at `peak` bytes each, with a margin and a reserve left free. Unknown: no more."""
    if available is None or not peak:
        return max(running, 1)
    more = max(0, int((available - RESERVE_BYTES) // (peak * MARGIN)))
    return max(running, 1, min(wanted, running + more))


def gib(size: int | None) -> str:
    return "unknown" if size is None else f"{size / 2**30:.1f} GiB"


def cluster_memory(run_id: str) -> int:
    """A run's containers' memory, summed: each one's highest use since it started (cgroup v1), else its use now."""
    total = 0
    for container in docker_client().containers.list(filters={"label": f"{RUN}={run_id}"}):
        try:
            memory = container.stats(stream=False, one_shot=True).get("memory_stats", {})
        except (NotFound, APIError):  # a driver removed between list and stats
            continue
        total += memory.get("max_usage") or memory.get("usage", 0)
    return total


class PeakSampler:
    """The highest `cluster_memory` of each watched run, read every SAMPLE_S in a thread of its own: a
    scenario's driver is gone when it ends, so its memory counts only while it runs."""

    def __init__(self) -> None:
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-sampler", daemon=True)

    def watch(self, run_id: str) -> None:
        self.peaks.setdefault(run_id, 0)
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def peak(self, run_id: str) -> int | None:
        return self.peaks.get(run_id) or None

    def _sample(self) -> None:
        while not self._stop.is_set():
            for run_id in list(self.peaks):
                try:
                    self.peaks[run_id] = max(self.peaks[run_id], cluster_memory(run_id))
                except (APIError, OSError) as error:  # an engine that stopped answering: the peak so far
                    say(f"clusters: memory of {run_id} not read ({error})")
            self._stop.wait(SAMPLE_S)


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
    sampler: PeakSampler = field(default_factory=PeakSampler)

    def watch(self, run_id: str) -> None:
        """Sample this run's cluster (a started worker's) until the baseline has run."""
        self.sampler.watch(run_id)

    def at_start(self) -> int:
        """Clusters to start with the baseline: two when a known peak fits, else one."""
        known, free = self.store.known(self.key), available_memory()
        count = clusters_that_fit(free, known, 2)
        self.notes.append(f"at the start: {count} cluster(s); a cluster's peak {gib(known)} (from an earlier run on "
                          f"this engine), {gib(free)} available")
        return count

    def after_baseline(self, run_id: str, running: int, wanted: int) -> int:
        """Clusters for the rows (`wanted` by the plan), the baseline's cluster's peak (sampled) remembered."""
        self.sampler.stop()
        peak, free = self.sampler.peak(run_id), available_memory()
        if peak:
            self.store.remember(self.key, peak)
        count = clusters_that_fit(free, peak, wanted, running)
        self.notes.append(f"for the rows: {count} cluster(s) of the {wanted} the plan wants; the baseline's cluster "
                          f"peaked at {gib(peak)} (measured), {gib(free)} available")
        return count

