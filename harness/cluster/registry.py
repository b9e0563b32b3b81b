"""Images through a registry: the content-hash tags pushed to one by a host that builds, pulled from it by
any host that runs, so a runner needs Python and a Docker engine only. `REGISTRY/eo-harness-kafka:<hash>`
is `eo-harness-kafka:<hash>` there; the engine does the talking, with its own credentials (`docker login`)
and its own rules for plain-http registries (loopback ones are allowed)."""

from __future__ import annotations

import re
import time

from docker.errors import APIError, NotFound

from harness.cluster.engine import docker_client
from harness.errors import BadInput, InfrastructureError

# host[:port] then path segments, as `docker tag` takes a repository's prefix (no scheme, no tag)
REGISTRY = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*")


def checked_registry(text: str) -> str:
    """`text` when it names a registry (and a path in it) as Docker writes one; bad input otherwise."""
    registry = text.strip().rstrip("/")
    if not REGISTRY.fullmatch(registry):
        raise BadInput(f"registry {text!r}: write host[:port][/path] as for `docker tag` (e.g. 127.0.0.1:5000/eo), "
                       "no scheme and no tag")
    return registry


def remote(registry: str, tag: str) -> tuple[str, str]:
    """The repository and tag of a local image tag (`eo-harness-kafka:<hash>`) in `registry`."""
    name, _, digest = tag.partition(":")
    return f"{registry}/{name}", digest


def pull(registry: str, tag: str) -> str | None:
    """Pull `tag` from `registry` and tag it as `tag`: None when that happened, else why not (not there,
    not allowed, not reachable), for the one line that says why the image must be built instead."""
    repository, digest = remote(registry, tag)
    client = docker_client()
    try:
        client.images.pull(repository, tag=digest)
    except NotFound:
        return f"not in {registry}"
    except APIError as error:
        return f"{registry} refused or did not answer: {error.explanation or error}"
    client.images.get(f"{repository}:{digest}").tag(*tag.split(":"))
    client.images.remove(f"{repository}:{digest}", noprune=True)  # the image stays, under its own tag
    return None


def push(registry: str, tag: str) -> float:
    """Push the local image `tag` to `registry` (its hash tag kept); the seconds it took."""
    started = time.monotonic()
    repository, digest = remote(registry, tag)
    client = docker_client()
    client.images.get(tag).tag(repository, digest)
    try:
        for chunk in client.images.push(repository, tag=digest, stream=True, decode=True):
            if "error" in chunk:
                raise InfrastructureError(f"push of {tag} to {registry} failed: {chunk['error'].strip()} (a registry "
                                          "that needs credentials takes them from `docker login`)")
    except APIError as error:
        raise InfrastructureError(f"push of {tag} to {registry} failed: {error.explanation or error}") from None
    finally:
        client.images.remove(f"{repository}:{digest}", noprune=True)
    return time.monotonic() - started


def holds(registry: str, tag: str) -> str | None:
    """None when `registry` has `tag` (asked without pulling it), else why not."""
    repository, digest = remote(registry, tag)
    try:
        docker_client().images.get_registry_data(f"{repository}:{digest}")
    except NotFound:
        return f"not in {registry}"
    except APIError as error:
        return f"{registry} refused or did not answer: {error.explanation or error}"
    return None
