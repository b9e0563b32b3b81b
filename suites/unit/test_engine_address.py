"""Where published ports go and are reached, from DOCKER_HOST; an engine that refuses a container is one clear line."""

from __future__ import annotations

import pytest

from harness.cluster import engine
from harness.cluster.engine import engine_host, publish_address
from harness.cluster.reaper import reaper_engine
from harness.errors import InfrastructureError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("docker_host", "expected"), [
    (None, "127.0.0.1"),
    ("unix:///var/run/docker.sock", "127.0.0.1"),
    ("unix:///run/eo-harness-engines/second/docker.sock", "127.0.0.1"),
    ("tcp://10.210.1.2:2375", "10.210.1.2"),
    ("ssh://ci@build-7.internal", "build-7.internal"),
])
def test_ports_are_published_where_the_harness_reaches_the_engine(monkeypatch, docker_host, expected) -> None:
    if docker_host is None:
        monkeypatch.delenv("DOCKER_HOST", raising=False)
    else:
        monkeypatch.setenv("DOCKER_HOST", docker_host)
    assert engine_host() == expected


def test_an_engine_that_cannot_set_resource_limits_is_one_line_with_the_fix(monkeypatch) -> None:
    from docker.errors import APIError

    from harness.cluster.engine import refused_start

    monkeypatch.setenv("DOCKER_HOST", "unix:///run/eo-podman/podman.sock")
    error = refused_start(APIError("500", explanation="runc create failed: error setting rlimits for ready "
                                                      "process: error setting rlimit type 7: operation not permitted"),
                          "the reaper")
    assert "default_ulimits" in str(error) and "podman.sock" in str(error) and error.exit_status == 3


def test_ports_are_published_on_the_engine_hosts_address_resolved_here(monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://localhost:2375")  # a name, as GitLab's tcp://docker:2375
    assert publish_address() == "127.0.0.1"

    def unresolvable(host: str) -> str:
        raise OSError("Name or service not known")

    monkeypatch.setattr(engine.socket, "gethostbyname", unresolvable)
    monkeypatch.setenv("DOCKER_HOST", "tcp://docker:2375")
    with pytest.raises(InfrastructureError, match="docker .*tcp://docker:2375.* does not resolve"):
        publish_address()


def test_the_reaper_reaches_an_engine_named_in_tcp_by_its_address(monkeypatch) -> None:
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "tcp://localhost:2375")  # the name resolves here, not in the engine's containers
    assert reaper_engine() == "tcp://127.0.0.1:2375"
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/eo-harness-engines/second/docker.sock")
    assert reaper_engine() == "unix:///run/eo-harness-engines/second/docker.sock"


def test_an_ssh_engine_whose_tunnel_does_not_open_is_one_line_naming_it(monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://nobody@127.0.0.1:1")  # nothing listens on port 1 here
    engine.docker_client.cache_clear()
    try:
        with pytest.raises(InfrastructureError) as raised:
            engine.docker_client()
    finally:
        engine.docker_client.cache_clear()
    message = str(raised.value)
    assert message.startswith("no ssh tunnel to the Docker engine at ssh://nobody@127.0.0.1:1")
    assert "\n" not in message and raised.value.exit_status == 3


@pytest.mark.parametrize(("url", "tls", "warned"), [
    ("tcp://10.0.0.7:2375", False, True), ("tcp://docker:2375", False, True), ("tcp://10.0.0.7:2376", True, False),
    ("tcp://127.0.0.1:2375", False, False), ("tcp://localhost:2375", False, False),
    ("unix:///var/run/docker.sock", False, False), ("ssh://me@far", False, False)])
def test_a_plain_tcp_engine_off_this_host_is_one_warning_with_the_tls_and_ssh_ways(url: str, tls: bool,
                                                                                   warned: bool) -> None:
    warning = engine.plain_tcp_warning(url, tls)
    assert (warning is not None) is warned
    if warning:
        assert "\n" not in warning and "DOCKER_TLS_VERIFY" in warning and "ssh://" in warning
