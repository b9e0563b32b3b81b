"""Cluster figures: median start time with images present, cold image build time, peak memory, and
where a scenario's time goes.

    python benchmarks/cluster_start.py [--starts 3] [--cold] [--brokers 1,3]

--brokers takes one or more cluster sizes (comma-separated): each is measured in the same run, so that
their figures compare (the machine is noisy); a scenario's phases (the reference sink, its coordinator
killed at a commit) are printed for each.

--cold removes the harness's images and build cache first (its wheels and debootstrap's packages) and
times `images build` from nothing (host caches of Maven, Go and pip stay as they are). Peak memory is
the largest sum of every container's memory use, sampled each second while the smoke scenario runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import threading
import time

from docker.errors import APIError, NotFound

from harness.cluster import images
from harness.cluster.engine import docker_client
from harness.cluster.image_inputs import cache_dir
from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.run.session import scenario

GOALS = {"start": 45.0, "build": 600.0, "memory_gib": 8.0}


def cold_build() -> float:
    images.remove_all()
    shutil.rmtree(cache_dir() / "build", ignore_errors=True)
    shutil.rmtree(cache_dir() / "wheels", ignore_errors=True)
    shutil.rmtree(cache_dir() / "debootstrap", ignore_errors=True)
    started = time.monotonic()
    images.build_all()
    return time.monotonic() - started


def cluster_memory(run_id: str) -> int:
    """Bytes used by every container of a run, now."""
    total = 0
    for container in docker_client().containers.list(filters={"label": f"eo-harness.run={run_id}"}):
        try:
            stats = container.stats(stream=False, one_shot=True)
        except (NotFound, APIError):  # a driver removed between list and stats
            continue
        memory = stats.get("memory_stats", {})
        total += memory.get("usage", 0) - memory.get("stats", {}).get("cache", 0)
    return total


def phases_of_a_scenario(cluster: Cluster) -> dict:
    """The phases (harness.run.phases) of the reference sink with its coordinator killed at a commit."""
    return scenario(cluster, "phases", sink="transactional", records=20_000,
                    faults=["kill:coordinator@txn.commit"]).run().phases


def peak_memory_during_smoke(cluster: Cluster) -> int:
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, cluster_memory(cluster.run_id))
            done.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        scenario(cluster, "memory", sink="builtin_kafka", records=20_000).run()
    finally:
        done.set()
        sampler.join()
    return peak


def measure(brokers: int, starts: int) -> tuple[list[float], int, dict]:
    """Start times, the peak memory of the smoke scenario and a fault scenario's phases on `brokers` brokers."""
    times, peak, phases = [], 0, {}
    for n in range(starts):
        started = time.monotonic()
        cluster = Cluster(brokers=brokers).start()
        times.append(time.monotonic() - started)
        try:
            if n == 0:
                peak = peak_memory_during_smoke(cluster)
                phases = phases_of_a_scenario(cluster)
        finally:
            cluster.stop()
    return times, peak, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--brokers", default="1", help="cluster sizes to measure, e.g. 1,3")
    args = parser.parse_args()

    build = cold_build() if args.cold else None
    images.build_all()
    for brokers in [int(n) for n in args.brokers.split(",")]:
        starts, peak, phases = measure(brokers, args.starts)
        print(f"{brokers} broker{'s' if brokers > 1 else ''}: cluster start, images present: median "
              f"{statistics.median(starts):.1f} s over {len(starts)} (runs: {', '.join(f'{s:.1f}' for s in starts)}; "
              f"goal <= {GOALS['start']:.0f} s)")
        print(f"{brokers} broker{'s' if brokers > 1 else ''}: peak cluster memory during the smoke scenario: "
              f"{peak / 2**30:.2f} GiB (goal < {GOALS['memory_gib']:.0f} GiB)")
        print(f"{brokers} broker{'s' if brokers > 1 else ''}: phases, coordinator killed at a commit: "
              + ", ".join(f"{k} {v:g}" for k, v in phases.items()))
    if build is not None:
        print(f"cold image build: {build:.0f} s (goal <= {GOALS['build']:.0f} s)")
    else:
        print("cold image build: not measured (pass --cold)")


if __name__ == "__main__":
    run_script(main)
