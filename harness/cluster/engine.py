"""The Docker engine connection, with one clear error when no engine answers."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Mapping
from functools import lru_cache, partial
from pathlib import Path
from urllib.parse import urlsplit

import docker
from docker.errors import APIError, DockerException
from docker.utils import kwargs_from_env
from requests.exceptions import RequestException
from testcontainers.core.config import testcontainers_config

from harness.cluster.engine_ca import trust_engine_ca
from harness.cluster.ssh_tunnel import open_tunnel, ssh_target
from harness.errors import BadInput, DockerUnavailable, InfrastructureError
from harness.progress import say

HOST_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")  # unix:///path/docker.sock, tcp://host:2376, ssh://user@host
ANSWER_TIMEOUT_S = 10.0  # an engine that has not answered by then is down or unreachable: said now, not in 120 s
API_TIMEOUT_S = 120.0  # a call of a working engine (an image build's step, a container's start)


_tunnelled: dict[str, str] = {}  # a tunnel's unix:// URL -> the ssh:// engine it reaches


def trust_ca(engine: Mapping[str, str] | None = None) -> None:
    """The engine's CA (of this process's environment, or of `engine`'s variables) trusted by every docker
    client of this process despite REQUESTS_CA_BUNDLE (harness.cluster.engine_ca)."""
    trust_engine_ca(Path(os.environ.get("HARNESS_CACHE") or Path.home() / ".cache" / "eo-harness") / "tls",
                    engine=engine)


trust_ca()  # before any docker client of this process (testcontainers makes its own as containers are declared)


@lru_cache(maxsize=1)
def docker_client() -> docker.DockerClient:
    """A client for the engine of DOCKER_HOST (or the default socket); DockerUnavailable with the fix when it
    does not answer. An ssh:// engine is reached through a tunnel of the ssh binary (harness.cluster.ssh_tunnel)."""
    url = engine_socket_url()
    try:
        if url.startswith("ssh://"):
            tunnel = open_tunnel(url)
            _tunnelled[tunnel] = url
            testcontainers_config.tc_properties["tc.host"] = tunnel  # testcontainers' containers go through it too
            connect = partial(docker.DockerClient, base_url=tunnel)
        else:
            connect = docker.from_env
        probe = connect(timeout=ANSWER_TIMEOUT_S)  # asks the engine's version: a silent address fails here
        probe.ping()
        probe.close()
        client = connect(timeout=API_TIMEOUT_S)
        warning = plain_tcp_warning(url, "tls" in kwargs_from_env())
        if warning:
            say(warning)
    except (DockerException, RequestException) as error:
        local = url.startswith("unix://") and "DOCKER_HOST" not in os.environ
        fix = ("`python -m harness doctor --fix` installs docker.io and starts dockerd" if local
               else "check that the engine runs and DOCKER_HOST names it")
        detail = str(error).splitlines()[0][:200] if str(error) else error.__class__.__name__
        raise DockerUnavailable(f"no Docker engine answers at {url} ({detail}); fix: {fix}") from None
    return client


def plain_tcp_warning(url: str, tls: bool) -> str | None:
    """One line for an engine reached over TCP without TLS on an address that is not this host's loopback:
    whoever reaches that port drives the engine (root on its host); None for every other engine."""
    parts = urlsplit(url)
    if parts.scheme != "tcp" or tls or not parts.hostname:
        return None
    try:
        if parts.hostname == "localhost" or ipaddress.ip_address(parts.hostname).is_loopback:
            return None
    except ValueError:  # a name: not known to be loopback
        pass
    return (f"warning: the Docker engine at {url} is reached over TCP without TLS: anyone who reaches that port "
            "drives it (root on its host); prefer TLS (port 2376, DOCKER_TLS_VERIFY=1, DOCKER_CERT_PATH) or "
            "ssh://user@host")


def engine_socket_url() -> str:
    """Which engine this process talks to (DOCKER_HOST, or Docker's default socket), as the user named it:
    an ssh:// engine's, not its tunnel's (testcontainers writes the host it uses into DOCKER_HOST)."""
    url = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    return _tunnelled.get(url, url)


def engine_host() -> str:
    """The address the harness reaches the engine's published ports by, and the only one they are
    published on: 127.0.0.1 for a local socket, the host of a tcp:// or ssh:// DOCKER_HOST."""
    url = urlsplit(engine_socket_url())
    return url.hostname if url.scheme in ("tcp", "ssh", "http", "https") and url.hostname else "127.0.0.1"


def publish_address() -> str:
    """The IP address ports are published on: engine_host's, resolved here (the engine takes only an IP for a
    binding; `tcp://docker:2375`, GitLab's Docker-in-Docker service, is a name). An engine behind NAT, whose
    own interfaces lack the address this host reaches it by, refuses the binding (harness.cluster.engine's
    refused_start says so in one line)."""
    host = engine_host()
    try:
        return socket.gethostbyname(host)
    except OSError as error:
        raise InfrastructureError(f"the Docker engine's host {host} (from {engine_socket_url()}) does not resolve "
                                  f"here: {error}") from None


def refused_start(error: APIError, what: str) -> InfrastructureError:
    """A container the engine would not start, in one line; with the fix where the cause is known."""
    reason = str(error.explanation or error)
    if "error setting rlimit" in reason:
        return InfrastructureError(
            f"the engine at {engine_socket_url()} could not start {what}: it sets resource limits above this host's "
            "hard limits (Podman's default nofile and nproc); fix: default_ulimits in containers.conf at or below "
            "`ulimit -Hn` and the service's process limit (docs/guides/engines.md)")
    return InfrastructureError(f"the engine at {engine_socket_url()} could not start {what}: {reason[:300]}")


def docker_hosts(text: str) -> list[str]:
    """The engines of `--docker-hosts A,B` (empty: none given). BadInput for an empty entry or one that
    is not a URL, for `certify` and pytest alike: a typo must not quietly drop an engine."""
    hosts = [host.strip() for host in text.split(",")] if text.strip() else []
    for host in hosts:
        if not HOST_URL.fullmatch(host):
            problem = f"entry {host!r} is not a Docker host URL" if host else "has an empty entry"
            raise BadInput(f"--docker-hosts {problem} (e.g. unix:///var/run/docker.sock,tcp://10.0.0.2:2375)")
        if host.startswith("ssh://"):
            ssh_target(host)
    return hosts
