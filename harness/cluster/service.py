"""The base of every service container: labelled, on the run's network under a fixed alias, logs kept."""

from __future__ import annotations

import shlex
from pathlib import Path

from docker.errors import APIError, NotFound
from docker.models.containers import ExecResult
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness.cluster.engine import engine_host, publish_address, refused_start
from harness.errors import NotReady
from harness.evidence import write_evidence

LOG_TAIL_LINES = 40
END_MARK = "eo-harness-exit"  # the last line of `output`'s command: its exit status
OUTPUT_ATTEMPTS = 5
ROOT = "0:0"  # the harness's own commands in a container run as root, whoever the container runs as
LOG_POLL_S = 0.2  # a driver's wait for its query's line reads its log this often


class Service(DockerContainer):
    """A container of the cluster, reachable from the others as `alias`."""

    def __init__(self, image: str, alias: str, network: Network, labels: dict[str, str]) -> None:
        super().__init__(image)
        self.alias = alias
        self.with_name(f"{labels['eo-harness.run']}-{alias}")
        self.with_network(network).with_network_aliases(alias)
        self._kwargs = {"labels": dict(labels), "hostname": alias}

    def with_memory_limit(self, limit: str) -> Service:
        """Cap the container's memory, so the cluster's peak stays bounded."""
        self._kwargs["mem_limit"] = limit
        return self

    def with_published_port(self, port: int, host_port: int | None = None) -> Service:
        """Publish a container port on the address the harness reaches the engine by, only (127.0.0.1 for a
        local engine; harness.cluster.engine.publish_address), on an ephemeral host port unless given."""
        self.ports[f"{port}/tcp"] = (publish_address(), host_port)  # type: ignore[assignment]
        return self

    def start(self) -> Service:
        """Start and wait for readiness; a timeout or an early exit raises NotReady with the log tail."""
        try:
            super().start()
        except (TimeoutError, RuntimeError) as error:
            raise self._not_ready(error) from None
        except APIError as error:
            raise refused_start(error, self.alias) from None
        return self

    def _not_ready(self, error: Exception) -> NotReady:
        reason = str(error).split(". ")[0]
        return NotReady(f"container {self.alias} did not become ready: {reason}\n"
                        f"--- last {LOG_TAIL_LINES} log lines of {self.alias} ---\n{self.log_tail()}")

    def published(self, port: int) -> int:
        """The host port that a published container port landed on."""
        return int(self.get_exposed_port(port))

    def reached_at(self, port: int) -> tuple[str, int]:
        """Where this process reaches a published container port: the engine's host and the port it landed on."""
        return engine_host(), self.published(port)

    def log_text(self) -> str:
        """The container's whole log (stdout and stderr interleaved)."""
        if self._container is None:
            return ""
        try:
            return self._container.logs(stdout=True, stderr=True).decode(errors="replace")
        except NotFound:
            return ""

    def output(self, command: list[str]) -> tuple[int, str]:
        """Run a command in the container: its exit status and its output.

        docker-py's `exec_run` now and then returns an empty output for a command that printed
        (docker/docker-py#2042, #3332): a process list read empty made an executor kill look like a
        Python worker's. The command's last line is therefore a mark with its exit status, and a
        reply without the mark is lost output, run again. It runs as root, whoever the container runs as:
        the system under test's processes (an unprivileged user) can neither signal nor trace it, nor
        replace the image's tools it runs.
        """
        script = f'eval "$EO_COMMAND"; printf "\\n{END_MARK} %d\\n" "$?"'  # the command kept out of sh's own argv
        environment = {"EO_COMMAND": shlex.join(command)}  # (so that `pgrep -f` does not find the sh)
        for _ in range(OUTPUT_ATTEMPTS):
            reply = self.get_wrapped_container().exec_run(["sh", "-c", script], environment=environment, user=ROOT)
            body, mark, status = reply.output.decode(errors="replace").rpartition(f"\n{END_MARK} ")
            if mark and status.strip().isdigit():
                return int(status), body
        raise RuntimeError(f"no output from {command[0]} in {self.alias} after {OUTPUT_ATTEMPTS} attempts")

    def exec_as_root(self, command: list[str]) -> ExecResult:
        """Run a command once in the container as root (as `output` does), its exit code and output."""
        return self.get_wrapped_container().exec_run(command, user=ROOT)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def save_log(self, folder: Path, filename: str | None = None) -> Path:
        """Write the container's log to `folder/<alias>.log` (or `filename`)."""
        return write_evidence(folder / (filename or f"{self.alias}.log"), self.log_text())

    def health(self) -> str | None:
        """None when running and attached to its network; else what is wrong."""
        if self._container is None:
            return f"{self.alias} was never started"
        try:
            self._container.reload()
        except NotFound:
            return f"{self.alias} is missing"
        if self._container.status != "running":
            return f"{self.alias} is {self._container.status}"
        if self._network is not None and self._network.name not in self._container.attrs["NetworkSettings"]["Networks"]:
            return f"{self.alias} is disconnected from the network"
        return None

    def remove(self) -> None:
        """Remove the container, whether it runs or not."""
        if self._container is not None:
            try:
                self._container.remove(force=True, v=True)
            except NotFound:
                pass
