"""Apache Flink in session mode: a JobManager (the driver's role) and TaskManagers (the executors'), each a
container of the Flink image (harness/images/flink), with checkpoints on the run's volume; jobs are submitted
to it with `flink run -py` in the JobManager's container, as Flink's unprivileged user."""

from __future__ import annotations

import json
import re
import shlex
import time

from docker.errors import APIError
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster.service import Service
from harness.cluster.spark import CHECKPOINTS, DROPPED_CAPABILITIES, SOURCE
from harness.errors import NotReady

JOBMANAGER = "flink-jobmanager"
TASKMANAGER_PREFIX = "flink-taskmanager-"
REST_PORT = 8081
ADDRESS = f"127.0.0.1:{REST_PORT}"  # the REST API as Flink's client reaches it in the JobManager's container
SLOTS = 2  # per TaskManager: a job of parallelism 2 restarts on the other TaskManager when one is lost
PARALLELISM = 2
FLINK_UID = 9999  # harness/images/flink makes the user
FLINK_HOME_DIR = "/home/flink"
AS_FLINK = ["setpriv", f"--reuid={FLINK_UID}", f"--regid={FLINK_UID}", "--init-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--"]
SCRATCH = {"/tmp": "rw,exec,nosuid,nodev,mode=1777,size=2g",
           FLINK_HOME_DIR: f"rw,exec,nosuid,nodev,uid={FLINK_UID},gid={FLINK_UID},mode=0755,size=512m"}
CHECKPOINT_INTERVAL_S = 2.0
HEARTBEAT_TIMEOUT_S = 10.0  # a TaskManager silent this long is lost and its tasks restart elsewhere (Spark's is 20 s)
APP = f"{SOURCE}/harness/driver/flink_app.py"  # the harness's job runner (harness.driver.flink_app)
JOB_LINE = re.compile(r"^HARNESS-FLINK-JOB ([0-9a-f]{32})$", re.M)
SUBMIT_TIMEOUT_S = 180.0
READY_TIMEOUT_S = 120.0

FLINK_CHECKPOINTS = f"{CHECKPOINTS}/.flink"  # every job's checkpoints on the run's volume: <job id>/chk-N
SAVEPOINTS = f"{CHECKPOINTS}/.flink-savepoints"

# Every job's settings, given to `flink run` as dynamic properties (a job takes its configuration from the client
# that submits it, not from the cluster's). Checkpoints are kept on the run's volume (retained on cancellation,
# and many of them) so that the harness can read each one's completion and restart a job from the latest after
# its JobManager is lost.
JOB_SETTINGS = {
    "parallelism.default": str(PARALLELISM),
    "execution.checkpointing.interval": f"{CHECKPOINT_INTERVAL_S:g}s",
    "execution.checkpointing.mode": "EXACTLY_ONCE",
    "execution.checkpointing.dir": f"file://{FLINK_CHECKPOINTS}",
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    "execution.checkpointing.num-retained": "1000",
    "state.backend.type": "hashmap",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "10",
    "restart-strategy.fixed-delay.delay": "2s",
}
# Every JobManager's and TaskManager's settings, as dynamic properties (the image's config.yaml is the release's
# own without a host, a port or a size)
SETTINGS = {
    "jobmanager.rpc.address": JOBMANAGER,
    "jobmanager.bind-host": "0.0.0.0",
    "rest.address": JOBMANAGER,
    "rest.bind-address": "0.0.0.0",
    "rest.port": str(REST_PORT),
    "taskmanager.bind-host": "0.0.0.0",
    "heartbeat.interval": "2000",
    "heartbeat.timeout": str(int(HEARTBEAT_TIMEOUT_S * 1000)),
    # a job's subtasks on different TaskManagers: a TaskManager killed stops one subtask's writer and committer,
    # whose region alone restarts (both Flink lines read this key)
    "taskmanager.load-balance.mode": "SLOTS",
}
JOBMANAGER_SETTINGS = {"jobmanager.memory.process.size": "1024m"}
TASKMANAGER_SETTINGS = {"taskmanager.numberOfTaskSlots": str(SLOTS), "taskmanager.memory.process.size": "1280m"}


def dynamic(settings: dict[str, str]) -> list[str]:
    """Flink's `-D key=value` arguments."""
    return [argument for key, value in settings.items() for argument in ("-D", f"{key}={value}")]


def contained(service: Service, command: list[str], checkpoints: str, package: str) -> None:
    """A container of the system under test, as Spark's are (harness.cluster.spark.contained): Flink's
    unprivileged user with no capability, the image read-only, the run's checkpoint volume and the harness
    package (its job runner) mounted."""
    service._kwargs["read_only"] = True
    service.tmpfs.update(SCRATCH)
    service._kwargs["cap_drop"] = list(DROPPED_CAPABILITIES)
    service._kwargs["cap_add"] = ["SYS_PTRACE"]
    service._kwargs["security_opt"] = ["no-new-privileges"]
    service._kwargs["working_dir"] = FLINK_HOME_DIR
    service._kwargs["init"] = True  # the JVM is not PID 1: a kill of it ends the container as a crash does
    service.with_env("HOME", FLINK_HOME_DIR)
    service.with_volume_mapping(checkpoints, CHECKPOINTS, "rw")
    service.with_volume_mapping(package, f"{SOURCE}/harness", "ro")
    service.with_command([*AS_FLINK, *command])


def last_failure(exceptions: dict) -> str:
    """The first line of the newest failure in an answer of `/jobs/<id>/exceptions`: its exception history,
    newest first (Flink 2.x removed the older `root-exception` field; 1.20 answers both)."""
    entries = (exceptions.get("exceptionHistory") or {}).get("entries") or []
    root = str(entries[0].get("stacktrace") or "") if entries else ""
    return root.strip().splitlines()[0] if root.strip() else "no exception reported"


class FlinkJobManager(Service):
    """The JobManager: its dispatcher takes jobs, its scheduler restarts them by Flink's restart strategy."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], checkpoints: str, package: str) -> None:
        super().__init__(image, JOBMANAGER, network, labels)
        contained(self, ["jobmanager.sh", "start-foreground", *dynamic({**SETTINGS, **JOBMANAGER_SETTINGS})],
                  checkpoints, package)
        self.with_env("PYTHONPATH", SOURCE)
        self.waiting_for(LogMessageWaitStrategy("Rest endpoint listening").with_startup_timeout(READY_TIMEOUT_S))

    def rest(self, path: str, method: str = "GET") -> dict:
        """A JSON answer of the REST API, asked from inside the container (no port is published); RuntimeError
        when it does not answer, the container's engine refusing the command included."""
        script = ("import json,sys,urllib.request as u;"
                  f"r=u.Request('http://127.0.0.1:{REST_PORT}'+sys.argv[1],method=sys.argv[2],"
                  "headers={'Content-Type':'application/json'},data=b'{}' if sys.argv[2]!='GET' else None);"
                  "print(u.urlopen(r,timeout=10).read().decode())")
        try:
            status, said = self.output(["python3", "-c", script, path, method])
        except APIError as error:  # the container not running: a JobManager killed (a fault) or gone
            raise RuntimeError(f"Flink's REST API {method} {path}: {self.alias} does not answer ({error})") from error
        if status != 0:
            raise RuntimeError(f"Flink's REST API {method} {path}: {said.strip()[-300:]}")
        return json.loads(said.strip() or "{}")

    def slots(self) -> int:
        """Task slots the registered TaskManagers offer (0 when the REST API does not answer yet)."""
        try:
            return sum(tm.get("slotsNumber", 0) for tm in self.rest("/taskmanagers").get("taskmanagers", []))
        except (RuntimeError, ValueError):
            return 0

    def wait_for_slots(self, wanted: int, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while self.slots() < wanted:
            if time.monotonic() > deadline:
                raise NotReady(f"Flink's TaskManagers offered fewer than {wanted} slots for {timeout:g} s")
            time.sleep(1.0)

    def submit(self, app_args: list[str], restore: str | None = None) -> tuple[str | None, str]:
        """`flink run -py` of the harness's job runner, as Flink's user; the job's id (None when it was not
        submitted) and what the client said."""
        command = ["flink", "run", "-m", ADDRESS, *dynamic(JOB_SETTINGS), *(["-s", restore] if restore else []),
                   "-py", APP, *app_args]
        script = f"cd {FLINK_HOME_DIR} && timeout {SUBMIT_TIMEOUT_S:g} {shlex.join([*AS_FLINK, *command])} 2>&1"
        _, said = self.output(["sh", "-c", script])
        found = JOB_LINE.search(said)
        return (found.group(1) if found else None), said

    def job_state(self, job: str) -> str:
        """The job's state (RUNNING, RESTARTING, FAILED, ...), UNKNOWN when the REST API cannot say."""
        try:
            return str(self.rest(f"/jobs/{job}").get("state", "UNKNOWN"))
        except (RuntimeError, ValueError):
            return "UNKNOWN"

    def job_failure(self, job: str) -> str:
        """The root exception of a job's last failure, as Flink reports it."""
        try:
            found = self.rest(f"/jobs/{job}/exceptions?maxExceptions=1")
        except (RuntimeError, ValueError) as error:
            return f"unknown ({error})"
        return last_failure(found)

    def stop_job(self, job: str, savepoints: str = SAVEPOINTS) -> bool:
        """Stop with a savepoint (its transactions committed, as an operator stops a job); else cancel it.
        Whether the graceful stop worked."""
        command = ["flink", "stop", "-m", ADDRESS, "--savepointPath", f"file://{savepoints}", job]
        status, _ = self.output(["sh", "-c", f"timeout 60 {shlex.join([*AS_FLINK, *command])} 2>&1"])
        if status == 0:
            return True
        self.output(["sh", "-c", f"timeout 30 {shlex.join([*AS_FLINK, 'flink', 'cancel', '-m', ADDRESS, job])} 2>&1"])
        return False


class FlinkTaskManager(Service):
    """A TaskManager: runs the job's tasks (its sink's writers and committers). The engine restarts its
    container when its JVM dies, as a deployment's restart policy would: Flink then runs the job's tasks
    on it again."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], index: int, checkpoints: str,
                 package: str) -> None:
        super().__init__(image, f"{TASKMANAGER_PREFIX}{index}", network, labels)
        contained(self, ["taskmanager.sh", "start-foreground", *dynamic({**SETTINGS, **TASKMANAGER_SETTINGS})],
                  checkpoints, package)
        self.with_env("PYTHONPATH", SOURCE)
        self._kwargs["restart_policy"] = {"Name": "always"}
        self.waiting_for(LogMessageWaitStrategy("Successful registration at resource manager")
                         .with_startup_timeout(READY_TIMEOUT_S))
