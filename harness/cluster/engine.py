"""The Docker engine connection, with one clear error when no engine answers."""

from __future__ import annotations

import os
from functools import lru_cache

import docker
from docker.errors import DockerException

from harness.errors import DockerUnavailable


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
