"""The Docker engine connection, with one clear error when no engine answers."""

from __future__ import annotations

import os
import re
from functools import lru_cache

import docker
from docker.errors import DockerException

from harness.errors import BadInput, DockerUnavailable

HOST_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")  # unix:///path/docker.sock, tcp://host:2376, ssh://user@host


@lru_cache(maxsize=1)
def docker_client() -> docker.DockerClient:
    """A client for the local engine; raise DockerUnavailable with the fix when there is none."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException as error:
        raise DockerUnavailable(
            f"no Docker engine answers ({error.__class__.__name__}); "
            "fix: `python -m harness doctor --fix` installs docker.io and starts dockerd"
        ) from None
    return client


def engine_socket_url() -> str:
    """Which engine this process talks to (DOCKER_HOST, or Docker's default socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def docker_hosts(text: str) -> list[str]:
    """The engines of `--docker-hosts A,B` (empty: none given). BadInput for an empty entry or one that
    is not a URL, for `certify` and pytest alike: a typo must not quietly drop an engine."""
    hosts = [host.strip() for host in text.split(",")] if text.strip() else []
    for host in hosts:
        if not HOST_URL.fullmatch(host):
            problem = f"entry {host!r} is not a Docker host URL" if host else "has an empty entry"
            raise BadInput(f"--docker-hosts {problem} (e.g. unix:///var/run/docker.sock,tcp://10.0.0.2:2375)")
    return hosts
