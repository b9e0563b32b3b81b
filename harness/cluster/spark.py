"""Spark standalone: master, workers, and a driver that runs one pipeline with spark-submit (client mode)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from docker.errors import APIError, NotFound
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy, WaitStrategy

from harness.cluster.service import LOG_POLL_S, ROOT, Service
from harness.driver.given import EVENT_LOG_ENV, HOLD_READY_ENV

if TYPE_CHECKING:
    from harness.output.base import Hold

MASTER_PORT = 7077
CHECKPOINTS = "/checkpoints"
# Spark's event log of each driver (harness.run.event_log), on the run's volume, where it outlives the driver
EVENT_LOGS = f"{CHECKPOINTS}/.events"
SOURCE = "/opt/eo"  # on the Python path; the harness package (a volume) is mounted at SOURCE/harness
DEPENDENCIES = "/opt/eo-deps"  # the sinks' dependencies (a volume: harness.cluster.dependency_volume)
DAEMON_MEMORY = "256m"
EXECUTOR_LOGS = (
    'for f in /tmp/spark-work/*/*/stderr /tmp/spark-work/*/*/stdout; do [ -f "$f" ] && '
    'echo "===== executor log $f" && cat "$f"; done; true'
)


# Spark's JVMs on two shared cores: the quick compiler only and one GC thread spend the CPU on the
# stream rather than on optimizing code that runs for a minute (a driver starts and reaches its first
# batch in about half the time); and Spark's classes mapped from the image's class-data-sharing archive
# (harness/images/spark/class_archive.py) rather than loaded and verified again by every JVM
CLASS_ARCHIVE = "/opt/spark-classes.jsa"
JVM_OPTIONS = f"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:SharedArchiveFile={CLASS_ARCHIVE}"
NETWORK_TIMEOUT_S = 20.0  # Spark's: an executor silent this long is lost, its tasks run elsewhere
QUERY_STARTED = "HARNESS-QUERY-STARTED"  # the app's line once its query runs (harness/driver/spark_app.py)
SESSION_READY = re.compile(r"^HARNESS-SESSION-READY t=([0-9.]+)$", re.M)  # the app's line with its session, and when
DRIVER_START_TIMEOUT_S = 120.0


# Capabilities of Docker's default set that the system under test runs without: Spark uses none of them,
# and a sink could turn them on the run (NET_RAW: raw sockets, to read or forge traffic on its network).
DROPPED_CAPABILITIES = ("NET_RAW", "MKNOD", "SYS_CHROOT", "SETFCAP", "NET_BIND_SERVICE", "AUDIT_WRITE")


# Spark runs as the image's unprivileged `spark` user (uid 185, as Apache's Spark images run it), with no
# capability and an empty bounding set: the sink can write none of the image's tools the harness runs (ps,
# kill, sh), and can neither signal nor trace the harness's own commands in its containers, which run as
# root. The container itself runs as root so that those commands keep Docker's capabilities (an exec as
# root into a container of another user gets none), SYS_PTRACE added for them to read a process's sockets.
SPARK_UID = 185  # harness/images/spark/Dockerfile makes the user
SPARK_USER = f"{SPARK_UID}:{SPARK_UID}"
SPARK_HOME_DIR = "/home/spark"  # its home, and the folder Spark starts in (a driver makes `artifacts/` there)
AS_SPARK = ["setpriv", f"--reuid={SPARK_UID}", f"--regid={SPARK_UID}", "--init-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


# The image is read-only in its containers: Spark writes only its scratch (/tmp: shuffle files, the JVMs'
# native libraries, which it loads from there, and the workers' executor folders) and its home, each a
# tmpfs of the container, and the run's volumes. Nothing in a container can change a tool the harness runs
# there, even past the user above.
SCRATCH = {"/tmp": "rw,exec,nosuid,nodev,mode=1777,size=2g",
           SPARK_HOME_DIR: f"rw,exec,nosuid,nodev,uid={SPARK_UID},gid={SPARK_UID},mode=0755,size=512m"}


def contained(service: Service, command: list[str]) -> None:
    """A container of the system under test running `command` as Spark's unprivileged user: the
    capabilities above dropped, no privilege gained by exec, the image read-only."""
    service._kwargs["read_only"] = True
    service.tmpfs.update(SCRATCH)  # (testcontainers' with_tmpfs_mount takes a size, not mount options)
    service._kwargs["cap_drop"] = list(DROPPED_CAPABILITIES)
    service._kwargs["cap_add"] = ["SYS_PTRACE"]  # the harness's root commands only: Spark's bounding set is empty
    service._kwargs["security_opt"] = ["no-new-privileges"]
    service._kwargs["working_dir"] = SPARK_HOME_DIR
    service.with_env("HOME", SPARK_HOME_DIR)
    service.with_command([*AS_SPARK, *command])


DRIVER_MEMORY = "512m"
CLASS_PATHS = ("spark.driver.extraClassPath", "spark.executor.extraClassPath")  # a sink's jars go on both
# Every application's Spark settings (besides its host and Python path, and its sink's own: Submit).
CONF = {
    "spark.driver.bindAddress": "0.0.0.0",
    "spark.driver.port": "7078",
    "spark.blockManager.port": "7079",
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    # Spark's own account of its tasks (a speculative copy, a retry), not lines the sink could print
    "spark.eventLog.enabled": "true",
    "spark.eventLog.compress": "false",
    # every executor on one machine: a free one takes a task at once rather than leave it up to 3 s
    # for the busy executor that holds its cached block (a first batch's uneven first tasks)
    "spark.locality.wait": "0s",
    "spark.sql.streaming.stopTimeout": "10s",
    # an executor that stops answering (paused, cut off) is given up after 20 s and its tasks
    # retried elsewhere: the zombie scenarios need that to happen well within a scenario
    "spark.network.timeout": f"{NETWORK_TIMEOUT_S:g}s",
    "spark.executor.heartbeatInterval": "2s",
    "spark.network.timeoutInterval": "5s",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_OPTIONS,
}
# Sized for the cluster's two cores, where a sink's --conf may say otherwise: Delta rebuilds a table's state
# in 50 tasks by default, most of a small batch's time on two cores
TUNING = {"spark.databricks.delta.snapshotPartitions": CONF["spark.cores.max"]}
# What the harness gives spark-submit for every run: a sink's --conf may set none of it
# (harness.subject.dependencies)
OWNED_CONF = frozenset({*CONF, "spark.driver.host", "spark.eventLog.dir", "spark.executorEnv.PYTHONPATH",
                        "spark.master", "spark.submit.deployMode", "spark.driver.memory", *CLASS_PATHS})


@dataclass(frozen=True)
class Submit:
    """What a run adds to spark-submit for its sink: the folder of its dependencies (python/ on the Python path
    of the driver and every executor's Python worker, jars/ on both JVMs' class path; harness.cluster.
    dependency_volume), and its own Spark settings (each a `--conf`, checked: harness.subject.dependencies)."""

    folder: str | None = None
    conf: tuple[tuple[str, str], ...] = ()

    def python_path(self) -> str:
        return f"{SOURCE}:{self.folder}/python" if self.folder else SOURCE

    def settings(self) -> dict[str, str]:
        jars = dict.fromkeys(CLASS_PATHS, f"{self.folder}/jars/*")
        return {**dict(self.conf), **(jars if self.folder else {})}


class SparkMaster(Service):
    """The standalone master."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], alias: str = "spark-master") -> None:
        super().__init__(image, alias, network, labels)
        contained(self, ["spark-class", "org.apache.spark.deploy.master.Master", "--host", alias,
                         "--port", str(MASTER_PORT), "--webui-port", "8080"])
        self.with_env("SPARK_DAEMON_MEMORY", DAEMON_MEMORY)
        self.with_env("SPARK_DAEMON_JAVA_OPTS", JVM_OPTIONS)
        self.waiting_for(LogMessageWaitStrategy("I have been elected leader").with_startup_timeout(60))

    @property
    def url(self) -> str:
        return f"spark://{self.alias}:{MASTER_PORT}"


class SparkWorker(Service):
    """A worker with one core; its executors see the checkpoint folder and the harness package (`package`:
    the run's volume holding it, harness.cluster.package_volume)."""

    def __init__(
        self, image: str, network: Network, labels: dict[str, str], alias: str, master: SparkMaster,
        checkpoints: str, package: str, dependencies: str, memory: str = "1g",
    ) -> None:
        super().__init__(image, alias, network, labels)
        contained(self, ["spark-class", "org.apache.spark.deploy.worker.Worker", "--host", alias, "--cores", "1",
                         "--memory", memory, "--work-dir", "/tmp/spark-work", master.url])
        self.with_env("SPARK_DAEMON_MEMORY", DAEMON_MEMORY)
        self.with_env("SPARK_DAEMON_JAVA_OPTS", JVM_OPTIONS)
        self.with_volume_mapping(checkpoints, CHECKPOINTS, "rw")
        self.with_volume_mapping(package, f"{SOURCE}/harness", "ro")
        self.with_volume_mapping(dependencies, DEPENDENCIES, "ro")
        # the engine's init as PID 1, the Worker's JVM its first child: a process the sink orphans is the
        # init's, never the Worker's, whose own children are its executors (harness.faults.processes)
        self._kwargs["init"] = True
        self.waiting_for(LogMessageWaitStrategy("Successfully registered with master").with_startup_timeout(60))

    def log_text(self) -> str:
        """The worker's log, then the stderr and stdout of every executor it ran (in its work folder)."""
        text = super().log_text()
        try:
            _, logs = self.output(["sh", "-c", EXECUTOR_LOGS])
        except (APIError, NotFound, RuntimeError):  # the worker is not running: its container log is all there is
            return text
        return text + "\n" + logs


class SparkDriver(Service):
    """One Spark application: `spark-submit` of the harness's app runner, in client mode."""

    def __init__(
        self, image: str, network: Network, labels: dict[str, str], alias: str, master: SparkMaster,
        checkpoints: str, package: str, dependencies: str, app_args: list[str], submit: Submit = Submit(),
        ready: str = QUERY_STARTED, hold: Hold | None = None,
    ) -> None:
        """`hold`: the table's commits the driver is held at (harness.driver.table_hold), None for none."""
        super().__init__(image, alias, network, labels)
        self.token = uuid.uuid4().hex[:12]  # this driver's: a replacement of the same name has its own
        self.event_log = f"{EVENT_LOGS}/{alias}-{self.token}"
        self.with_volume_mapping(checkpoints, CHECKPOINTS, "rw")
        self.with_volume_mapping(package, f"{SOURCE}/harness", "ro")
        self.with_volume_mapping(dependencies, DEPENDENCIES, "ro")
        self.with_env("PYTHONPATH", submit.python_path())
        self.with_env(EVENT_LOG_ENV, self.event_log)
        # the engine's init as PID 1, so that the driver's JVM is not: a PID namespace's init ignores every
        # signal it has no handler for, SIGSTOP too, and the app stops its JVM at a table commit
        # (harness.driver.table_hold); the init passes the nemesis's SIGTERM on, a SIGKILL ends them all
        self._kwargs["init"] = True
        conf = {**CONF, "spark.driver.host": alias, "spark.executorEnv.PYTHONPATH": submit.python_path(),
                "spark.eventLog.dir": f"file:{self.event_log}"}
        command = ["spark-submit", "--master", master.url, "--deploy-mode", "client", "--driver-memory", DRIVER_MEMORY]
        for key, value in {**TUNING, **submit.settings(), **conf}.items():
            command += ["--conf", f"{key}={value}"]
        command += [f"{SOURCE}/harness/driver/spark_app.py", *app_args]
        contained(self, command)
        waiting: WaitStrategy = (LogMessageWaitStrategy(ready).with_startup_timeout(DRIVER_START_TIMEOUT_S)
                                 .with_poll_interval(LOG_POLL_S))
        if hold is not None:  # the app waits for the hold's word before its query starts (HOLD_READY_ENV)
            self.with_env(HOLD_READY_ENV, f"{hold.holds}/{self.token}.ready")
            waiting = _HoldFirst(["python3", "-m", "harness.driver.table_hold", hold.folder, hold.pattern, hold.holds,
                                  self.token, hold.commits], waiting)
        self.waiting_for(waiting)

    def started_at(self) -> float | None:
        """When the engine started this container (seconds since the epoch), None when it cannot say."""
        try:
            container = self.get_wrapped_container()
            container.reload()
            return engine_time(container.attrs["State"]["StartedAt"])
        except (APIError, NotFound, AttributeError, KeyError, ValueError):
            return None

    def session_ready_at(self) -> float | None:
        """When the app had its SparkSession (seconds since the epoch, its own line), None before or without it."""
        found = SESSION_READY.search(self.log_text())
        return float(found.group(1)) if found else None


class _HoldFirst(WaitStrategy):
    """Start the hold at a table's commits in the driver's container, as root (out of reach of Spark's user,
    which runs the sink), as soon as the container runs; then wait for the query as `then` does."""

    def __init__(self, hold: list[str], then: WaitStrategy) -> None:
        super().__init__()
        self.hold = hold
        self.then = then

    def wait_until_ready(self, container: SparkDriver) -> None:  # type: ignore[override]
        container.get_wrapped_container().exec_run(self.hold, user=ROOT, detach=True)
        self.then.wait_until_ready(container)


def engine_time(text: str) -> float:
    """Seconds since the epoch from the engine's RFC 3339 time with nanoseconds (`2026-11-27T07:40:01.123456789Z`)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return seconds + float(f"0.{fraction}") if fraction.isdigit() else seconds
