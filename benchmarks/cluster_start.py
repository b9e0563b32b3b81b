"""Cluster figures: median start time with images present, cold image build time, peak memory.

    python benchmarks/cluster_start.py [--starts 3] [--cold]

--cold removes the harness's images and build cache first and times `images build` from nothing
(host caches of Maven, Go and pip stay as they are). Peak memory is the largest sum of every
container's memory use, sampled each second while the smoke scenario runs.
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
from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.run.session import scenario

GOALS = {"start": 45.0, "build": 600.0, "memory_gib": 8.0}


def cold_build() -> float:
    client = docker_client()
    for image in reversed(images.current().all):
        if images.present(image):
            client.images.remove(image.tag, force=True)
    shutil.rmtree(images.cache_dir() / "build", ignore_errors=True)
    shutil.rmtree(images.cache_dir() / "wheels", ignore_errors=True)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--cold", action="store_true")
    args = parser.parse_args()

    build = cold_build() if args.cold else None
    images.build_all()
    starts = []
    peak = 0
    for n in range(args.starts):
        started = time.monotonic()
        cluster = Cluster().start()
        starts.append(time.monotonic() - started)
        try:
            if n == 0:
                peak = peak_memory_during_smoke(cluster)
        finally:
            cluster.stop()

    print(f"cluster start, images present: median {statistics.median(starts):.1f} s over {len(starts)} "
          f"(runs: {', '.join(f'{s:.1f}' for s in starts)}; goal <= {GOALS['start']:.0f} s)")
    if build is not None:
        print(f"cold image build: {build:.0f} s (goal <= {GOALS['build']:.0f} s)")
    else:
        print("cold image build: not measured (pass --cold)")
    print(f"peak cluster memory during the smoke scenario: {peak / 2**30:.2f} GiB "
          f"(goal < {GOALS['memory_gib']:.0f} GiB)")


if __name__ == "__main__":
    run_script(main)
