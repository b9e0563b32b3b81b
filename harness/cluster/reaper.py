"""The run's reaper: a small container started before the others, holding a connection from this
process; when the connection closes, however this process ended (SIGKILL included), it removes every
container and network of the run within seconds. The sweep of earlier runs' leftovers stays as the
fallback (an engine the reaper cannot reach through a unix socket gets no reaper)."""

from __future__ import annotations

import socket

from docker.errors import APIError
from testcontainers.core.container import DockerContainer
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import reaper_process
from harness.cluster.engine import engine_host, engine_socket_url, refused_start
from harness.errors import NotReady

SOURCE = "/opt/eo/reaper_process.py"


class Reaper(DockerContainer):
    """The reaper container of one run (see reaper_process)."""

    def __init__(self, image: str, labels: dict[str, str], engine: str) -> None:
        super().__init__(image)
        run_id = labels["eo-harness.run"]
        self.with_name(f"{run_id}-reaper")
        self.with_volume_mapping(engine, reaper_process.DOCKER_SOCKET, "rw")
        self.with_volume_mapping(reaper_process.__file__, SOURCE, "ro")
        self.ports[f"{reaper_process.PORT}/tcp"] = (engine_host(), None)  # type: ignore[assignment]
        self.with_command(["python", SOURCE, run_id])
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
        self.connection = socket.create_connection((engine_host(), port), timeout=30)
        return self

    def release(self) -> None:
        """Close the connection: the reaper removes what is left of the run, then itself."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def engine_socket() -> str | None:
    """The unix socket the engine answers on (mounted into the reaper); None for an engine over TCP."""
    host = engine_socket_url()
    return host.removeprefix("unix://") if host.startswith("unix://") else None
