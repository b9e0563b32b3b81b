"""A kill that does not kill is never a fault that took effect: `kill:sender` records its effect only once
every process holding the sender's connection is seen gone; a pid gone before the signal, a signal that
raised, or a process alive after it is a fault error, and the one judge makes the row ineffective
(the container faked: pure logic)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from docker.errors import APIError

import harness.faults.signals
from harness.checker.judge import INEFFECTIVE, judge
from harness.checker.verdict import PASS, Verdict
from harness.faults.nemesis import Nemesis
from harness.faults.processes import alive, missed
from harness.faults.spec import parse_step
from harness.gate.points import GateEvent, Peer
from harness.gate.protocol import END_TXN, RequestInfo
from harness.history import History

pytestmark = pytest.mark.unit
# the worker's tables and socket links: pid 217 holds 172.18.0.5:41394 -> the relay's 9092 (test_processes)
SNAPSHOT_OUTPUT = ("   1: 050012AC:A1B2 020012AC:2384 01 00000000:00000000 02:000A2F7B 00000000     0        0 48213 1 "
                   "0000000000000000 20 4 30 10 -1\n/proc/217/fd/19 socket:[48213]\n")
STEP = parse_step("kill:sender@txn.pre_commit")
EVENT = GateEvent("txn.pre_commit", Peer("spark-worker-1", "executors", "172.18.0.5", 41394), 1,
                  RequestInfo(END_TXN, 3, 7, "rdkafka", transactional_id="out-p1", committed=True))


@dataclass
class Result:
    exit_code: int
    output: bytes


@dataclass
class Worker:
    """A Spark worker container: pid 217 (named "pid=4000000") holds the gate connection; how its kill
    goes is the test's."""

    survives: bool = False  # SIGKILL does not end it (a PID namespace's init ignores it)
    vanished: bool = False  # gone before the signal: kill finds no such process
    raises: bool = False  # the engine fails the exec
    zombie: bool = False  # ended, its parent has not reaped it yet
    restarts: bool = False  # the process was the container's own: the engine starts the container again
    alias: str = "spark-worker-1"
    killed: list[list[str]] = field(default_factory=list)

    def get_wrapped_container(self) -> Container:
        return Container(self)

    def output(self, command: list[str]) -> tuple[int, str]:
        if self.restarts and self.killed:
            raise APIError("409 Client Error: Conflict (container is restarting)")
        if command[0] == "sh":
            return 0, SNAPSHOT_OUTPUT
        if command[0] == "ps" and "-eo" in command:
            return 0, "    1     0 /sbin/docker-init\n    7     1 java Worker\n"  # no executor: a Python worker sent
        assert command[:3] == ["ps", "-o", "pid=,stat="], command
        if self.killed and not self.survives:
            return (0, "  217 Z\n") if self.zombie else (1, "")
        return 0, "  217 Sl\n"

    def exec_as_root(self, command: list[str]) -> Result:
        if self.raises:
            raise APIError("409 Client Error: container is restarting")
        self.killed.append(command)
        if self.vanished:
            return Result(1, b"kill: (217) - No such process\n")
        return Result(0, b"")


@dataclass
class Container:
    """What the engine says of the container: running since its start, or started again after its kill."""

    worker: Worker

    def reload(self) -> None:
        pass

    @property
    def attrs(self) -> dict:
        again = self.worker.restarts and bool(self.worker.killed)
        return {"State": {"Running": not again, "Restarting": again, "StartedAt": "t0"}}


@dataclass
class Hold:
    dropped: bool = False

    def drop(self) -> None:
        self.dropped = True


@dataclass
class Cluster:
    services: list[Worker]
    executor_hosts: list[Worker]
    gate: None = None
    executor_is_host_jvm: bool = False


def kill(tmp_path: Path, worker: Worker) -> tuple[list[dict], Hold]:
    """Inject the step on a nemesis over `worker`: the history it leaves, and the held request."""
    history, hold = History(tmp_path / "history.jsonl"), Hold()
    driver = Worker(alias="spark-driver")
    nemesis = Nemesis(Cluster([worker], [worker]), history, lambda: driver, lambda kill: None)  # type: ignore[arg-type]
    nemesis.inject(STEP, EVENT, hold)  # type: ignore[arg-type]
    nemesis.close()
    history.close()
    return [json.loads(line) for line in history.path.read_text().splitlines()], hold


def outcome(events: list[dict]) -> str:
    return judge(Verdict(PASS, "exactly-once", {}, 10, 10, 10), events, [str(STEP)]).outcome


@pytest.fixture(autouse=True)
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness.faults.signals, "GONE_WAIT_S", 0.5)


@pytest.mark.parametrize("zombie, restarts", [(False, False), (True, False), (False, True)],
                         ids=["reaped", "not-yet-reaped", "its-container-restarting"])
def test_a_sender_seen_gone_is_the_fault_s_effect(tmp_path: Path, zombie: bool, restarts: bool) -> None:
    worker = Worker(zombie=zombie, restarts=restarts)  # restarting: a TaskManager whose JVM held the connection
    events, hold = kill(tmp_path, worker)
    assert worker.killed == [["kill", "-KILL", "217"]]  # the holder of the connection, not "pid=4000000"
    assert [e["effect"] for e in events if e["type"] == "effect"] == ["SIGKILL to pid 217 in spark-worker-1: gone"]
    assert hold.dropped and outcome(events) == PASS


@pytest.mark.parametrize("worker, why", [
    (Worker(survives=True), "pid 217 still alive after SIGKILL in spark-worker-1"),
    (Worker(vanished=True), "kill -KILL 217 failed (status 1): kill: (217) - No such process"),
    (Worker(raises=True), "container is restarting"),
], ids=["still-alive", "gone-before-the-kill", "kill-raised"])
def test_a_kill_that_did_not_kill_is_an_error_and_the_row_ineffective(tmp_path: Path, worker: Worker,
                                                                        why: str) -> None:
    events, hold = kill(tmp_path, worker)
    assert not [e for e in events if e["type"] == "effect"]
    assert [why in e["error"] for e in events if e["type"] == "fault.error"] == [True]
    assert hold.dropped and outcome(events) == INEFFECTIVE


def test_what_ps_says_and_what_kill_says_decide() -> None:
    assert alive("  217 Sl\n  218 Z\n  219 Zl\n  220 R+\n  221 X\n") == {217, 219, 220}  # Zl: its threads run on
    assert missed("KILL", [217], 0, "", set()) is None
    assert missed("KILL", [217, 240], 0, "", {240}) == "pid 240 still alive after SIGKILL"
    assert missed("TERM", [217], 1, "kill: (217) - No such process\n", {217}) == (
        "kill -TERM 217 failed (status 1): kill: (217) - No such process")
