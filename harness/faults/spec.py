"""Fault steps as data, and the small grammar that writes them.

    step     := ["then "] action ":" target "@" point [":" number] ["#" nth] ["~" role] ["/" duration]
              | ["then "] "fail:sender@" http_point ["#" nth] ["~" role] "/" status [",retry-after=" seconds]
    action   := kill | stop | pause | partition | isolate | delay | drop
    target   := sender | executor | driver | worker | executors                (executors: the role's link)
              | broker | broker:N | coordinator | leader | controller | followers     (Kafka's nodes)
    point    := txn.init | txn.first_write | txn.pre_commit | txn.commit | txn.abort | produce | produce.sent
              | pg.commit | s3.put | catalog.commit | batch.planned | batch.committed | state.committed
              | table.committed | checkpoint.triggered | checkpoint.completed | time
    number   := the batch id (batch points) or seconds after the stream started (time, at most 86400)
                (table.committed:N: a table output's new version holds batch N, Spark's commits/N not yet;
                checkpoint.triggered:N, checkpoint.completed:N: a Flink job's batch.planned and batch.committed)
    nth      := fire on the nth matching occurrence (default 1)
    role     := only requests sent by this role (driver or executors; gate points only)
    duration := how long the fault lasts, e.g. 10s or 500ms, at most 86400s (pause, partition, isolate, delay)
    status   := the HTTP status a `fail` step answers in the server's place, 400 to 599, with a Retry-After
                header of that many whole seconds when `,retry-after=N` follows it
    then     := count occurrences only once the step before it was carried out (a killed driver
                replaced): the second of two faults lands while the stream recovers from the first
                (not on time points)

Numbers are written in ASCII digits (`2`, `2.5`; no sign, exponent, nan or inf), batch ids, occurrences and
broker ids whole. Seconds are at most a day, 86400: no scenario lasts that long, and a timer set further
than its clock can count would fail only when the fault fires.

A plain (non-transactional) write has two points: `produce` as its response comes back (the write is
in the log, its sender does not know yet) and `produce.sent`, only for a write to the output, as it
arrives (the broker has not seen it: held, it lands when released, whatever became of its sender).

`pg.commit` is a commit on PostgreSQL's wire (a COMMIT or END, or a write sent outside a transaction
block: autocommit), matched as it arrives at the gate: held there, the server has not seen it. `kill`
or `stop` its sender (or the driver, an executor), `partition` its role's link to PostgreSQL, `isolate`:
the held commit is dropped with the connection, so the server rolls the transaction back. `delay` holds
it, `pause` holds it while its sender sleeps. `drop:sender@pg.commit` lets the commit through and
closes the connection in place of its response: committed, and the sink gets an error (the lost commit
response). Kafka's nodes as targets of a pg.commit step: broker, broker:N or controller.

`s3.put` is the PUT of a table's commit object to the run's S3 server (Delta's `_delta_log/<version>.json`,
Iceberg's `metadata/<...>.metadata.json`), `catalog.commit` an Iceberg REST catalog's commit (the table's
metadata pointer swapped), each on its HTTP connection through the gate (`--store s3`): matched, held and
dropped as pg.commit's are (a partition cuts a role's link to the S3 server or to the catalog).
`fail:sender@catalog.commit#2/503` lets the commit through and answers it with that status in the server's
place (an S3 error document, a REST catalog's error model), then closes the connection: applied, and the
client told it failed. `fail:sender@catalog.commit#2/503,retry-after=1` also says when to try again, as a
server shedding load or a proxy in front of it may: a client that retries sends the applied commit again.

Kafka's nodes are named as the fault fires: `broker` is broker 1, `broker:N` broker N, `coordinator`
the transaction coordinator of the sender's transactional id (else of the last one the gate saw),
`leader` the leader of the partition the request writes to (else of the partition the sender last
added), `controller` the active KRaft controller. Killed, stopped, paused or isolated, the node is
restarted, resumed or reconnected; partitioned, the system under test's links to it are cut (the
brokers still reach it). `followers` (partition only) cuts the leader's followers from it: the ISR
shrinks to the leader alone, below min.insync.replicas, until it heals.

Examples: kill:sender@txn.pre_commit#2, kill:driver@batch.committed:3, partition:executors@txn.commit/10s,
pause:executor@txn.pre_commit/40s, delay:sender@txn.commit/20s, kill:broker@time:20,
kill:coordinator@txn.commit#2, partition:leader@txn.first_write#3/20s, isolate:coordinator@txn.pre_commit#2/30s,
partition:followers@txn.first_write#2/30s, stop:broker:3@batch.planned:2,
kill:driver@txn.commit followed by then kill:driver@txn.first_write, kill:sender@pg.commit#2~driver,
partition:executors@pg.commit#3/10s, drop:sender@pg.commit#2.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass

from harness.errors import BadInput

ACTIONS = ("kill", "stop", "pause", "partition", "isolate", "delay", "drop", "fail")
ANSWERING = ("drop", "fail")  # actions on a commit's answer: matched as it is answered
NODES = ("broker", "coordinator", "leader", "controller")  # Kafka nodes, resolved when the fault fires
TARGETS = ("sender", "executor", "driver", "worker", "executors", *NODES, "followers")
KAFKA_POINTS = ("txn.init", "txn.first_write", "txn.pre_commit", "txn.commit", "txn.abort", "produce", "produce.sent")
PG_POINTS = ("pg.commit",)  # a commit on PostgreSQL's wire: matched as it arrives, `drop` as it is answered
HTTP_POINTS = ("s3.put", "catalog.commit")  # a table's commit over HTTP: matched as pg.commit is
ANSWERED_POINTS = (*PG_POINTS, *HTTP_POINTS)  # a service's commit, whose answer a `drop` step takes
GATE_POINTS = (*KAFKA_POINTS, *ANSWERED_POINTS)
STREAM_POINTS = ("batch.planned", "batch.committed")
STATE_POINTS = ("state.committed",)  # a stateful query's state store version for batch N appeared
TABLE_POINTS = ("table.committed",)  # a table output's version holding batch N, before Spark's commits/N
CHECKPOINT_POINTS = ("checkpoint.triggered", "checkpoint.completed")  # a Flink job's checkpoint N: Flink's names
FIRES_ON = dict(zip(CHECKPOINT_POINTS, STREAM_POINTS, strict=True))  # ... of the batch points a checkpoint fires
BATCH_POINTS = (*STREAM_POINTS, *CHECKPOINT_POINTS, *STATE_POINTS, *TABLE_POINTS)  # they take a batch id
POINTS = (*GATE_POINTS, *BATCH_POINTS, "time")
TRANSACTION_POINTS = tuple(p for p in GATE_POINTS if p.startswith("txn."))
ROLES = ("driver", "executors")
TIMED = ("pause", "partition", "isolate", "delay")
TRANSACTIONAL = "transactional"  # a sink's kind: it writes in Kafka transactions (txn.* points apply)
PLAIN = "plain"  # it writes with plain produce requests (the produce point applies)
TABLE = "table"  # it writes a table (harness.output: delta, postgres): the table points apply, Kafka's write points not

STEP = re.compile(
    r"^(?:(?P<then>then)\s+)?(?P<action>[a-z_]+):(?P<target>[a-z_]+(?::[^@]*)?)@(?P<point>[a-z][a-z0-9_.]*)"
    r"(?::(?P<number>[^#~/]+))?(?:#(?P<nth>[^~/]+))?(?:~(?P<role>[^/]+))?(?:/(?P<duration>.+))?$", re.ASCII
)
WHOLE = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() takes '²', which int() then refuses
DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
MAX_SECONDS = 86400.0  # a time point's seconds and a fault's duration: a day, longer than any scenario runs


@dataclass(frozen=True)
class FaultStep:
    """One trigger-to-fault step of a schedule."""

    action: str
    target: str
    point: str
    number: float | None = None
    nth: int = 1
    role: str | None = None
    duration: float | None = None
    after: bool = False  # `then`: occurrences count once the step before it fired
    status: int | None = None  # `fail`: the HTTP status answered in the server's place
    retry_after: int | None = None  # `fail`: the seconds its Retry-After header says, if it has one

    def __str__(self) -> str:
        text = f"{'then ' if self.after else ''}{self.action}:{self.target}@{self.point}"
        if self.number is not None:
            text += f":{self.number:g}"
        if self.nth != 1:
            text += f"#{self.nth}"
        if self.role:
            text += f"~{self.role}"
        if self.duration is not None:
            text += f"/{self.duration:g}s"
        if self.status is not None:
            text += f"/{self.status}"
        if self.retry_after is not None:
            text += f",retry-after={self.retry_after}"
        return text


def _duration(token: str, spec: str) -> float:
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(ms|s)", token)
    if not match:
        raise BadInput(f"fault spec '{spec}': bad duration '{token}' (write e.g. 10s or 500ms)")
    value = float(match.group(1))
    return value / 1000 if match.group(2) == "ms" else value


def parse_step(spec: str) -> FaultStep:
    """Parse one step; a BadInput names the bad token."""
    match = STEP.match(spec.strip())
    if not match:
        raise BadInput(f"fault spec '{spec}': expected [then ]ACTION:TARGET@POINT[:N][#NTH][~ROLE][/DURATION]")
    parts = match.groupdict()
    number = None if parts["number"] is None else _number(parts["number"], parts["point"], spec)
    nth = 1
    if parts["nth"] is not None:
        if not WHOLE.fullmatch(parts["nth"]) or int(parts["nth"]) < 1:
            raise BadInput(_bad_occurrence(spec, parts["nth"]))
        nth = int(parts["nth"])
    duration = status = retry_after = None
    if parts["action"] == "fail":
        status_token, _, header = (parts["duration"] or "").partition(",")
        status = _status(status_token or None, spec)
        if header:
            retry_after = _retry_after(header, spec)
    elif parts["duration"] is not None:
        duration = _duration(parts["duration"], spec)
    step = FaultStep(parts["action"], parts["target"], parts["point"], number, nth, parts["role"], duration,
                     parts["then"] is not None, status, retry_after)
    return checked(step, spec)


def _status(token: str | None, spec: str) -> int:
    """A `fail` step's HTTP status: 400 to 599, in ASCII digits."""
    if token is None or not WHOLE.fullmatch(token) or not 400 <= int(token) <= 599:
        raise BadInput(f"fault spec '{spec}': 'fail' answers with an HTTP status from 400 to 599, e.g. "
                       "fail:sender@catalog.commit#2/503")
    return int(token)


def _retry_after(token: str, spec: str) -> int:
    """A `fail` step's Retry-After: `retry-after=N`, whole seconds up to a day."""
    match = re.fullmatch(r"retry-after=([0-9]+)", token)
    if match is None or int(match.group(1)) > MAX_SECONDS:
        raise BadInput(f"fault spec '{spec}': after a fail step's status, ',retry-after=N' (whole seconds, at most "
                       f"{MAX_SECONDS:.0f}), e.g. fail:sender@catalog.commit#2/503,retry-after=1")
    return int(match.group(1))


def _number(token: str, point: str, spec: str) -> float:
    """The number after a point, written in ASCII digits; a BadInput in the words of the point's numbers."""
    if DECIMAL.fullmatch(token):
        return float(token)
    if point in BATCH_POINTS:
        raise BadInput(_bad_batch(spec, point, token))
    if point == "time":
        raise BadInput(_bad_seconds(spec, token))
    raise BadInput(f"fault spec '{spec}': bad number '{token}' (ASCII digits, e.g. 2 or 2.5)")


def spark_steps(steps: list[FaultStep]) -> list[FaultStep]:
    """`steps` when a Spark query can reach each of their points; BadInput for a Flink checkpoint's."""
    for step in (step for step in steps if step.point in CHECKPOINT_POINTS):
        raise BadInput(f"fault spec '{step}': {step.point} is a Flink job's checkpoint (--engine flink); a Spark "
                       f"query's batch is at {FIRES_ON[step.point]}:N")
    return steps


def _bad_batch(spec: str, point: str, shown: str) -> str:
    return f"fault spec '{spec}': bad batch id '{shown}' after '{point}' (a whole number from 0, e.g. {point}:2)"


def _bad_seconds(spec: str, shown: str) -> str:
    return (f"fault spec '{spec}': bad seconds '{shown}' after 'time' (a finite number from 0 to {MAX_SECONDS:g}, "
            "e.g. time:20)")


def _bad_occurrence(spec: str, shown: str) -> str:
    return f"fault spec '{spec}': bad occurrence '#{shown}' (a whole number from 1, e.g. #2)"


def checked(step: FaultStep, spec: str) -> FaultStep:
    """`step` when its fields are known and make sense together (a parsed spec's or a saved schedule's);
    a BadInput naming `spec` and what to write instead."""
    if not all(isinstance(text, str) for text in (step.action, step.target, step.point, step.role or "")) or \
            not all(value is None or _is_number(value) for value in (step.number, step.duration)):
        raise BadInput(f"fault spec '{spec}': action, target, point and role are text, number and duration numbers")
    if step.action not in ACTIONS:
        raise BadInput(f"fault spec '{spec}': unknown action '{step.action}' (one of {', '.join(ACTIONS)})")
    if step.target not in TARGETS and not _numbered_broker(step.target, spec):
        raise BadInput(f"fault spec '{spec}': unknown target '{step.target}' (one of {', '.join(TARGETS)}, "
                       "broker:N)")
    if step.point not in POINTS:
        raise BadInput(f"fault spec '{spec}': unknown point '{step.point}' (one of {', '.join(POINTS)})")
    if step.number is not None and step.point not in (*BATCH_POINTS, "time"):
        raise BadInput(
            f"fault spec '{spec}': '{step.number:g}' after '{step.point}': only batch points and time take a number"
        )
    if step.number is None and step.point == "time":
        raise BadInput(f"fault spec '{spec}': 'time' needs the seconds, e.g. time:20")
    _check_numbers(step, spec)
    if step.role is not None and (step.role not in ROLES or step.point not in GATE_POINTS):
        raise BadInput(f"fault spec '{spec}': bad role filter '~{step.role}' (driver or executors, on gate points "
                       "only)")
    _validate(step, spec)
    return step


def _check_numbers(step: FaultStep, spec: str) -> None:
    """Numbers a fault can fire on: a batch id is a whole number from 0, seconds are finite, not negative
    and at most MAX_SECONDS, an occurrence a whole number from 1, a duration above 0 and at most MAX_SECONDS
    (nan, inf and -1 would be accepted and never fire; 1e14 s would fail in the timer that fires or heals it)."""
    number = step.number
    if number is not None and step.point in BATCH_POINTS and not (number >= 0 and float(number).is_integer()):
        raise BadInput(_bad_batch(spec, step.point, f"{number:g}"))
    if number is not None and step.point == "time" and not 0 <= number <= MAX_SECONDS:
        raise BadInput(_bad_seconds(spec, f"{number:.10g}"))
    if isinstance(step.nth, bool) or not isinstance(step.nth, int) or step.nth < 1:
        raise BadInput(_bad_occurrence(spec, str(step.nth)))
    duration = step.duration
    if duration is not None and not 0 < duration <= MAX_SECONDS:
        raise BadInput(f"fault spec '{spec}': bad duration '{duration:.10g}s' (more than 0, at most {MAX_SECONDS:g}s; "
                       "write e.g. 10s or 500ms)")


def _is_status(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599


def _is_number(value: object) -> bool:
    """An int or a float, not a bool (a saved schedule's JSON may hold anything)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbered_broker(target: str, spec: str) -> bool:
    """Whether the target is `broker:N`; a bad N is named."""
    if not target.startswith("broker:"):
        return False
    number = target.removeprefix("broker:")
    if not WHOLE.fullmatch(number) or int(number) < 1:
        raise BadInput(f"fault spec '{spec}': bad broker '{number}' in '{target}' (a node id from 1)")
    return True


def is_node(target: str) -> bool:
    """Whether a step's target is a Kafka node (broker, broker:N, coordinator, leader, controller)."""
    return target in NODES or target.startswith("broker:")


def _validate(step: FaultStep, spec: str) -> None:
    if step.after and step.point == "time":
        raise BadInput(f"fault spec '{spec}': 'then' counts occurrences of a point; a time point has none")
    if step.action in TIMED and step.duration is None:
        raise BadInput(f"fault spec '{spec}': '{step.action}' needs a duration, e.g. /10s")
    if step.action not in TIMED and step.duration is not None:
        raise BadInput(f"fault spec '{spec}': '{step.action}' takes no duration")
    if step.target == "sender" and step.point not in GATE_POINTS:
        raise BadInput(f"fault spec '{spec}': target 'sender' needs a gate point ({', '.join(GATE_POINTS)})")
    if step.action == "delay" and (step.target != "sender" or step.point not in GATE_POINTS):
        raise BadInput(f"fault spec '{spec}': 'delay' delays the matched request: delay:sender@<gate point>/D")
    if step.action == "partition" and step.target not in (*ROLES, "followers") and not is_node(step.target):
        raise BadInput(f"fault spec '{spec}': 'partition' cuts links: a role's (driver, executors), those to a "
                       "Kafka node (broker, broker:N, coordinator, leader, controller) or a leader's followers")
    if step.target == "followers" and step.action != "partition":
        raise BadInput(f"fault spec '{spec}': 'followers' is cut from their leader: partition:followers@.../D")
    if step.target == "executors" and step.action != "partition":
        raise BadInput(f"fault spec '{spec}': target 'executors' is a link; did you mean 'executor'?")
    _validate_pg(step, spec)


def _validate_pg(step: FaultStep, spec: str) -> None:
    """`drop` closes a service's commit connection in place of its answer (PostgreSQL's, an HTTP server's);
    a step at such a point partitions a role's link to that service, and no Kafka request names a
    coordinator or leader there."""
    if step.action == "fail" and (step.target != "sender" or step.point not in HTTP_POINTS
                                  or not _is_status(step.status)):
        raise BadInput(f"fault spec '{spec}': 'fail' answers an HTTP commit in its server's place: "
                       "fail:sender@s3.put/503 or fail:sender@catalog.commit/503")
    if step.action != "fail" and (step.status is not None or step.retry_after is not None):
        raise BadInput(f"fault spec '{spec}': only 'fail' takes a status")
    if step.retry_after is not None and (not isinstance(step.retry_after, int) or isinstance(step.retry_after, bool)
                                         or not 0 <= step.retry_after <= MAX_SECONDS):
        raise BadInput(f"fault spec '{spec}': a fail step's retry-after is whole seconds, at most {MAX_SECONDS:.0f}")
    if step.action == "drop" and (step.target != "sender" or step.point not in ANSWERED_POINTS):
        raise BadInput(f"fault spec '{spec}': 'drop' drops a commit's response: drop:sender@pg.commit, "
                       "drop:sender@s3.put or drop:sender@catalog.commit")
    if step.point not in ANSWERED_POINTS:
        return
    if step.action == "partition" and step.target not in ROLES:
        raise BadInput(f"fault spec '{spec}': at {step.point} 'partition' cuts a role's link to its server: "
                       f"partition:driver@{step.point}/D or partition:executors@{step.point}/D")
    if step.target in ("coordinator", "leader", "followers"):
        raise BadInput(f"fault spec '{spec}': no Kafka request at {step.point} names a {step.target}; a Kafka node "
                       "there is broker, broker:N or controller")


def parse_schedule(specs: list[str]) -> list[FaultStep]:
    return _in_order([parse_step(spec) for spec in specs], specs)


def _in_order(steps: list[FaultStep], specs: list[str]) -> list[FaultStep]:
    """The steps, when the first is not a `then` step (which counts from the step before it)."""
    if steps and steps[0].after:
        raise BadInput(f"fault spec '{specs[0]}': 'then' needs a step before it")
    return steps


def schedule_to_json(steps: list[FaultStep]) -> str:
    return json.dumps([asdict(step) for step in steps])


def schedule_from_json(text: str) -> list[FaultStep]:
    """The steps of a saved schedule, each checked as a spec is; BadInput for one that is not a step."""
    steps = json.loads(text)
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise BadInput("a schedule is a JSON list of steps, as `run` writes to schedule.json")
    specs = [json.dumps(step) for step in steps]
    return _in_order([checked(FaultStep(**step), spec) for step, spec in zip(steps, specs, strict=True)], specs)


def random_schedule(seed: int, steps: int = 1, transactional: bool = True, table: bool = False,
                    points: tuple[str, ...] = ()) -> list[FaultStep]:
    """A reproducible random schedule: same seed, same steps (never at a state point, which a
    stateless pipeline never reaches). `table`: a table sink's, whose write point is the table's commit
    (and the gate points its store's commits cross, `points`: PostgreSQL's wire)."""
    rng = random.Random(seed)
    writes = (*TABLE_POINTS, *points) if table else TRANSACTION_POINTS if transactional else ("produce",)
    points = (*writes, *STREAM_POINTS)
    schedule = []
    for _ in range(steps):
        point = rng.choice(points)
        gate_actions = ("kill", "pause", "partition", "delay", *(("drop",) if point in ANSWERED_POINTS else ()))
        action = rng.choice(gate_actions if point in GATE_POINTS else ("kill", "pause"))
        target = {"partition": rng.choice(ROLES), "delay": "sender", "drop": "sender"}.get(
            action, rng.choice(("sender", "executor", "driver") if point in GATE_POINTS else ("executor", "driver"))
        )
        number = float(rng.randint(1, 3)) if point in BATCH_POINTS else None  # a backlog is read in 5 batches
        duration = float(rng.randint(2, 10)) if action in TIMED else None
        schedule.append(FaultStep(action, target, point, number, rng.randint(1, 3), None, duration))
    return schedule


def random_nemesis(seed: int, seconds: float, every: float = 10.0) -> list[FaultStep]:
    """The common approach to chaos, for comparison with faults at protocol points: kill or pause a
    random executor or driver at random times, about one fault every `every` s over `seconds` (the
    stream's expected run time). Same seed, same steps; at least one."""
    rng = random.Random(seed)
    schedule: list[FaultStep] = []
    at = rng.expovariate(1 / every)
    while at < seconds or not schedule:
        action, target = rng.choice((("kill", "executor"), ("kill", "driver"), ("pause", "executor"),
                                     ("pause", "driver")))
        duration = float(rng.randint(2, 15)) if action == "pause" else None
        schedule.append(FaultStep(action, target, "time", round(min(at, seconds), 1), 1, None, duration))
        at += rng.expovariate(1 / every)
    return schedule


def kind_from_points(points: set[str]) -> str:
    """A sink's kind, observed rather than declared: the gate points a fault-free run reached."""
    return TRANSACTIONAL if any(point in TRANSACTION_POINTS for point in points) else PLAIN
