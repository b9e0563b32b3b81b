"""The run's reaper: a small container started before the others, holding a connection from this
process; when the connection closes, however this process ended (SIGKILL included), it removes every
container and network of the run within seconds. It reaches the engine through its unix socket, mounted,
or over TCP for an engine reached so, with TLS and this process's client certificate where the engine
asks for it (its program and the certificates go in on the command line and in its environment: no host
path is needed). The sweep of earlier runs' leftovers stays as the fallback."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from docker.errors import APIError
from docker.utils import kwargs_from_env
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import reaper_process
from harness.cluster.engine import engine_host, engine_socket_url, publish_address, refused_start
from harness.errors import NotReady
from harness.gate.relay import keep_alive


class Reaper(DockerContainer):
    """The reaper container of one run (see reaper_process)."""

    def __init__(self, image: str, labels: dict[str, str], engine: str, secret: str) -> None:
        super().__init__(image)
        run_id = labels["eo-harness.run"]
        self.secret = secret
        self.with_env("EO_SECRET", secret)
        self.with_name(f"{run_id}-reaper")
        if engine.startswith("unix://"):
            self.with_volume_mapping(engine.removeprefix("unix://"), reaper_process.DOCKER_SOCKET, "rw")
        elif engine.startswith("ssh://"):  # the engine's own socket, on its own host
            self.with_volume_mapping(reaper_process.DOCKER_SOCKET, reaper_process.DOCKER_SOCKET, "rw")
        else:
            self.with_env("EO_ENGINE", engine)
            self.with_envs(**tls_environment())
        self.ports[f"{reaper_process.PORT}/tcp"] = (publish_address(), None)  # type: ignore[assignment]
        self.with_command(["python", "-c", Path(reaper_process.__file__).read_text(), run_id])
        self._kwargs = {"labels": dict(labels)}
        self.waiting_for(LogMessageWaitStrategy("REAPER-READY").with_startup_timeout(60))
        self.connection: socket.socket | None = None

    def start(self) -> Reaper:
        """Start it and connect: from now on, this process ending removes the run."""
        try:
            super().start()
        except (TimeoutError, RuntimeError) as error:
            raise NotReady(f"the reaper did not start: {error}") from None
        except APIError as error:
            raise refused_start(error, "the reaper") from None
        port = int(self.get_exposed_port(reaper_process.PORT))
        self.connection = heard_connection(engine_host(), port, self.secret)
        return self

    def release(self) -> None:
        """Close the connection: the reaper removes what is left of the run, then itself."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None


HEARD_WAIT_S = reaper_process.SECRET_SECONDS + 5  # its answer to one connection
HEARD_DEADLINE_S = 60.0  # connections tried until then: strangers may fill its hearing for a while


def heard_connection(host: str, port: int, secret: str, deadline_s: float = HEARD_DEADLINE_S) -> socket.socket:
    """A connection the reaper took for this process's: the secret said and its answer heard. One it closed
    unheard (its hearing full of strangers' connections) is tried again, until `deadline_s`: a run whose
    reaper never heard the harness would be reaped as soon as it started."""
    give_up = time.monotonic() + deadline_s
    while True:
        connection = socket.create_connection((host, port), timeout=HEARD_WAIT_S)
        try:
            connection.sendall(f"{secret}\n".encode())
            if _answer(connection) == reaper_process.HEARD:
                connection.settimeout(None)
                keep_alive(connection)
                return connection
        except OSError:
            pass
        connection.close()
        if time.monotonic() > give_up:
            raise NotReady(f"the reaper did not hear this process in {deadline_s:g} s (its port kept busy by "
                           "other connections?)")
        time.sleep(1.0)


def _answer(connection: socket.socket) -> bytes:
    """The reaper's first line (with its newline), or what came before it closed."""
    said = b""
    while len(said) < len(reaper_process.HEARD) and not said.endswith(b"\n"):
        chunk = connection.recv(len(reaper_process.HEARD) - len(said))
        if not chunk:
            break
        said += chunk
    return said


def reaper_engine() -> str:
    """The engine as the reaper reaches it (DOCKER_HOST or the default socket), a tcp:// host by its address
    (a name such as GitLab's `docker` resolves for the job, not inside the engine's containers)."""
    url = engine_socket_url()
    if url.startswith("tcp://"):
        return url.replace(f"//{engine_host()}", f"//{publish_address()}", 1)
    return url


def tls_environment() -> dict[str, str]:
    """The reaper's TLS material (PEM text) when this process reaches its engine over TLS, read as the docker
    SDK reads DOCKER_TLS_VERIFY and DOCKER_CERT_PATH: EO_TLS_CERT and EO_TLS_KEY (this process's client
    certificate), EO_TLS_CA when the engine's certificate is verified. None otherwise."""
    tls = kwargs_from_env().get("tls")
    if tls is None or tls.cert is None:
        return {}
    cert, key = tls.cert
    found = {"EO_TLS_CERT": Path(cert).read_text(), "EO_TLS_KEY": Path(key).read_text()}
    if tls.verify and tls.ca_cert:
        found["EO_TLS_CA"] = Path(tls.ca_cert).read_text()
    return found
