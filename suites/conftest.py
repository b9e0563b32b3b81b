"""Fixtures shared by the suites that start engines of their own."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import docker
import pytest

from harness.cluster import images, isolated_engine
from harness.cluster.engine import docker_client
from harness.progress import say


@pytest.fixture(scope="session")
def far_engine() -> Iterator[str]:
    """An engine that is really elsewhere (harness.cluster.isolated_engine: reachable only over TCP, its
    networks and file system out of this host's reach), with the harness's images copied in from the
    local engine (a copy, not a build); its DOCKER_HOST URL."""
    if os.geteuid() != 0:
        pytest.skip("an isolated engine needs root (network and mount namespaces, dockerd)")
    images.build_all()
    url = isolated_engine.start("ci-far", index=9)
    try:
        far = docker.DockerClient(base_url=url, timeout=600)
        started = time.monotonic()
        for image in images.current().all:
            if not far.images.list(name=image.tag):
                far.images.load(docker_client().images.get(image.tag).save(named=True))
        say(f"images copied into the isolated engine in {time.monotonic() - started:.0f} s")
        yield url
    finally:
        isolated_engine.stop("ci-far")
