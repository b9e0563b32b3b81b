"""Fixtures shared by the suites that start engines or clusters of their own."""

from __future__ import annotations

import os
from collections.abc import Iterator

import docker
import pytest

from harness.cluster import images, isolated_engine
from harness.cluster.topology import Cluster
from harness.faults.space import MIN_BROKERS
from harness.progress import say
from harness.run.session import session
from harness.settings import from_pytest

FAR = "ci-far"  # the isolated engine of the suites


@pytest.fixture(scope="session")
def cluster(eo_cluster: Cluster) -> Cluster:
    """The plugin's session cluster, under the short name these suites use (a project names its own)."""
    return eo_cluster


@pytest.fixture
def stall_timeout(eo_stall_timeout: float) -> float:
    return eo_stall_timeout


@pytest.fixture
def live_rate(eo_live_rate: float) -> float:
    return eo_live_rate


@pytest.fixture(scope="session")
def far_engine() -> Iterator[dict[str, str]]:
    """An engine that is really elsewhere (harness.cluster.isolated_engine: reachable only over TCP with TLS,
    its networks and file system out of this host's reach), with the harness's images copied in from the
    local engine; its environment (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH)."""
    if os.geteuid() != 0:
        pytest.skip("an isolated engine needs root (network and mount namespaces, dockerd)")
    images.build_all()
    environment = isolated_engine.start(FAR, index=9)
    try:
        say(f"images copied into the isolated engine in {isolated_engine.copy_images(FAR):.0f} s")
        yield environment
    finally:
        isolated_engine.stop(FAR)


@pytest.fixture(scope="session")
def far_client(far_engine: dict[str, str]) -> docker.DockerClient:
    """A docker SDK client of the far engine, over TLS."""
    return isolated_engine.client(FAR)


@pytest.fixture(scope="module")
def three_brokers(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A cluster of three Kafka brokers: the session's when it has as many (--brokers 3), else one of this
    module's own, removed when the module is done."""
    if from_pytest(request.config, "brokers") >= MIN_BROKERS:
        yield request.getfixturevalue("cluster")
        return
    with session(brokers=MIN_BROKERS) as opened:
        yield opened.cluster
