"""Fixtures shared by the suites that start engines or clusters of their own."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.cluster import images, isolated_engine
from harness.cluster.topology import Cluster
from harness.faults.space import MIN_BROKERS
from harness.progress import say
from harness.run.session import session
from harness.settings import from_pytest


@pytest.fixture(scope="session")
def far_engine() -> Iterator[str]:
    """An engine that is really elsewhere (harness.cluster.isolated_engine: reachable only over TCP, its
    networks and file system out of this host's reach), with the harness's images copied in from the
    local engine; its DOCKER_HOST URL."""
    if os.geteuid() != 0:
        pytest.skip("an isolated engine needs root (network and mount namespaces, dockerd)")
    images.build_all()
    url = isolated_engine.start("ci-far", index=9)
    try:
        say(f"images copied into the isolated engine in {isolated_engine.copy_images(url):.0f} s")
        yield url
    finally:
        isolated_engine.stop("ci-far")


@pytest.fixture(scope="module")
def three_brokers(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A cluster of three Kafka brokers: the session's when it has as many (--brokers 3), else one of this
    module's own, removed when the module is done."""
    if from_pytest(request.config, "brokers") >= MIN_BROKERS:
        yield request.getfixturevalue("cluster")
        return
    with session(brokers=MIN_BROKERS) as opened:
        yield opened.cluster
