"""How many clusters an engine has the memory and the cores for, measured, never assumed: a cluster's
peak is sampled from the engine while the baseline runs (the sum over the run's containers, its driver
included, of each one's highest use since it started, or its current use where the engine keeps no
maximum), and so are the cores its work takes (its containers' CPU time over the time it ran); both are
kept per engine and cluster shape, so that the next run knows them before its first cluster starts. The
memory free is the host's (a local engine) or the engine's total less what its containers use; the cores
are the engine's. The plan (harness.certify.lanes) starts a cluster only where its rows finish sooner with
the cores shared.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from docker.errors import APIError, NotFound
from docker.models.containers import Container

from harness.certify.lanes import GAIN
from harness.cluster.engine import docker_client, engine_socket_url
from harness.cluster.image_inputs import cache_dir
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


def cluster_usage(run_id: str) -> tuple[int, dict[str, int]]:
    """A run's containers' memory, summed (each one's highest use since it started, cgroup v1, else its use
    now), and each one's CPU time since it started, in nanoseconds. Read all at once: an engine can take a
    second to answer each container's stats (Debian's dockerd 20.10 does, one-shot or not), and read one after
    the other a cluster's ten took ten seconds, so a driver's last seconds went uncounted."""
    total, cpu = 0, {}
    for container, stats in run_stats(run_id):
        memory = stats.get("memory_stats", {})
        total += memory.get("max_usage") or memory.get("usage", 0)
        cpu[container.id] = cpu_time(stats)
    return total, cpu


def run_stats(run_id: str) -> list[tuple[Container, dict]]:
    """Every container of a run with its stats, read at once (`all_stats`)."""
    return all_stats(docker_client().containers.list(filters={"label": f"{RUN}={run_id}"}))


def cpu_time(stats: dict) -> int:
    """A container's CPU time since it started, in nanoseconds, from its stats."""
    return stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0)


def all_stats(containers: list[Container]) -> list[tuple[Container, dict]]:
    """Each container's stats, asked at once; a container removed meanwhile (a driver) is left out."""
    if not containers:
        return []
    with ThreadPoolExecutor(max_workers=len(containers), thread_name_prefix="stats") as pool:
        read = list(zip(containers, pool.map(_stats, containers), strict=True))
    return [(container, stats) for container, stats in read if stats is not None]


def _stats(container: Container) -> dict | None:
    """A container's stats; None for one removed meanwhile (gone, or its answer an empty body: not JSON)."""
    try:
        return container.stats(stream=False, one_shot=True)
    except (NotFound, APIError, ValueError):
        return None


def engine_cpus() -> int:
    """The cores the engine runs containers on."""
    return int(docker_client().info().get("NCPU") or 1)


class PeakSampler:
    """The highest memory of each watched run (`cluster_usage`), and the cores its containers used, read every
    SAMPLE_S in a thread of its own: a scenario's driver is gone when it ends, so its memory counts only while
    it runs, and its CPU time as last read."""

    def __init__(self) -> None:
        self.peaks: dict[str, int] = {}
        self.cpu_ns: dict[str, dict[str, int]] = {}  # run -> container -> CPU time, as last read
        self.since: dict[str, float] = {}  # run -> when its watch began
        self.read_at: dict[str, float] = {}  # run -> when its CPU time was last read
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-sampler", daemon=True)

    def watch(self, run_id: str) -> None:
        self.peaks.setdefault(run_id, 0)
        self.cpu_ns.setdefault(run_id, {})
        self.since.setdefault(run_id, time.monotonic())
        if not self._thread.is_alive() and not self._stop.is_set():
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def peak(self, run_id: str) -> int | None:
        return self.peaks.get(run_id) or None

    def cores(self, run_id: str) -> float | None:
        """The cores the run's containers used on average from when its watch began (they all started after
        it) until their CPU time was last read."""
        used, since, until = sum(self.cpu_ns.get(run_id, {}).values()), self.since.get(run_id), \
            self.read_at.get(run_id)
        if not used or since is None or until is None or until <= since:
            return None
        return used / 1e9 / (until - since)

    def _sample(self) -> None:
        while not self._stop.is_set():
            for run_id in list(self.peaks):
                try:
                    memory, cpu = cluster_usage(run_id)
                    self.peaks[run_id] = max(self.peaks[run_id], memory)
                    self.cpu_ns[run_id].update(cpu)
                    self.read_at[run_id] = time.monotonic()
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
    used = sum(stats.get("memory_stats", {}).get("usage", 0) for _, stats in all_stats(client.containers.list()))
    return int(client.info()["MemTotal"]) - used


class PeakStore:
    """The last measured peak of a cluster (and, under `cores_key`, the cores it used) per engine and shape
    (`shape_key`), in the harness's cache."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_dir() / "cluster-peaks.json"

    def _read(self) -> dict[str, float]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def known(self, key: str) -> float | None:
        return self._read().get(key)

    def remember(self, key: str, value: float) -> None:
        peaks = self._read()
        peaks[key] = value
        write_evidence(self.path, json.dumps(peaks, indent=1, sort_keys=True))  # atomic: workers read it too


def shape_key(engine: str, brokers: int) -> str:
    """The key a certification's cluster's peak is kept under: its engine and Kafka brokers."""
    return f"{engine} brokers={brokers}"


def cores_key(key: str) -> str:
    """Where the cores a cluster of that shape used are kept, beside its peak."""
    return f"{key} cores"


def load(cores: float | None, cpus: int) -> float:
    """The share of the engine one cluster's work takes (0: not measured)."""
    return min(cores / cpus, 1.0) if cores else 0.0


@dataclass
class Sizing:
    """`certify`'s default spread on one engine: the clusters that shorten the plan with the engine's
    cores shared, as many as its memory holds. The second starts with the baseline when a cluster's peak is
    known from an earlier run and its cores leave room for a second (its start then overlaps the baseline),
    else once the baseline's cluster was measured."""

    key: str  # the engine and cluster shape (`shape_key`)
    store: PeakStore = field(default_factory=PeakStore)
    notes: list[str] = field(default_factory=list)  # how it decided, for the console and the certificate
    sampler: PeakSampler = field(default_factory=PeakSampler)

    def at_start(self, run_ids: Sequence[str]) -> int:
        """Clusters to start with the baseline: two when a known peak fits and a cluster's known cores leave
        room for a second, else one; the first of the workers' `run_ids` that many, each sampled until the
        baseline has run."""
        known, free = self.store.known(self.key), available_memory()
        cores, cpus = self.store.known(cores_key(self.key)), engine_cpus()
        count = clusters_that_fit(free, known, 2 if load(cores, cpus) <= GAIN else 1)
        self.notes.append(f"at the start: {count} cluster(s); a cluster's peak {gib(known)} and its work "
                          f"{_cores(cores)} of the engine's {cpus} (from an earlier run on this engine), "
                          f"{gib(free)} available")
        for run_id in run_ids[:count]:
            self.sampler.watch(run_id)
        return count

    def after_baseline(self, run_id: str, running: int, wanted: Callable[[float], int]) -> int:
        """Clusters for the rows: as many as the plan wants with the cores shared (`wanted`, given the share of
        the engine a cluster's work takes) and the memory holds; the baseline's cluster's peak and cores
        (sampled) remembered."""
        self.sampler.stop()
        peak, cores, free, cpus = self.sampler.peak(run_id), self.sampler.cores(run_id), available_memory(), \
            engine_cpus()
        if peak:
            self.store.remember(self.key, peak)
        if cores:
            self.store.remember(cores_key(self.key), round(cores, 2))
        worth = wanted(load(cores, cpus))
        count = clusters_that_fit(free, peak, worth, running)
        self.notes.append(f"for the rows: {count} cluster(s), the plan's {worth} with the engine's {cpus} cores "
                          f"shared (the baseline's cluster's work took {_cores(cores)}), as many as the memory "
                          f"holds (it peaked at {gib(peak)}, {gib(free)} available; measured)")
        return count


def _cores(cores: float | None) -> str:
    return "unknown cores" if not cores else f"{cores:.1f} cores"
