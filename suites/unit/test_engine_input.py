"""The engine a user names is checked before anything starts: an ssh:// destination never becomes an ssh
option (exit 2), and an engine that does not answer is said in seconds with exit 3, not after 120 s.
Only loopback is dialled."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from harness.cluster import engine
from harness.cluster.engine import docker_client, docker_hosts
from harness.cluster.ssh_tunnel import open_tunnel, ssh_target
from harness.errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, BadInput, DockerUnavailable

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("url", ["ssh://-oProxyCommand=touch%20x", "ssh://-oProxyCommand=x@host",
                                 "ssh://user@-host", "ssh://", "ssh://host:port"])
def test_an_ssh_destination_ssh_would_read_as_an_option_is_bad_input(url: str) -> None:
    with pytest.raises(BadInput, match="Docker host") as refused:
        ssh_target(url)
    assert refused.value.exit_status == EXIT_BAD_INPUT
    with pytest.raises(BadInput):
        open_tunnel(url)  # refused before any ssh runs
    with pytest.raises(BadInput):
        docker_hosts(f"unix:///var/run/docker.sock,{url}")


def test_an_ssh_destination_is_user_at_host_and_its_port() -> None:
    assert ssh_target("ssh://ci@build-7.internal:2222") == ("ci@build-7.internal", 2222)
    assert ssh_target("ssh://build-7.internal") == ("build-7.internal", None)


@pytest.fixture
def fresh_client(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """docker_client() asked anew (it is cached per process), with no TLS settings of the environment."""
    for name in ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    docker_client.cache_clear()
    yield
    docker_client.cache_clear()


def test_an_engine_that_refuses_is_exit_3_at_once(fresh_client: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # closed again below: nothing listens there
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(DockerUnavailable, match=f"no Docker engine answers at tcp://127.0.0.1:{port}") as refused:
        docker_client()
    assert refused.value.exit_status == EXIT_INFRASTRUCTURE and time.monotonic() - started < 5


def test_an_engine_that_accepts_and_never_answers_is_exit_3_in_seconds(fresh_client: None,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert engine.ANSWER_TIMEOUT_S <= 10, "a silent engine is said in seconds"
    monkeypatch.setattr(engine, "ANSWER_TIMEOUT_S", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent.getsockname()[1]}")
        started = time.monotonic()
        with pytest.raises(DockerUnavailable) as refused:
            docker_client()
        assert refused.value.exit_status == EXIT_INFRASTRUCTURE and time.monotonic() - started < 5
