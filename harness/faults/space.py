"""The fault space of a sink and pipeline, drawn from what their fault-free run showed: the gate points
it reached (Kafka's, PostgreSQL's commits) and which role sent them, whether the query kept state, and the
sink's own transaction
timeout (in every InitProducerId request). A fault class is one cell: an action on a target at a point,
for the role that sent the request there, in a timing class (instant, or just below or just above a
timeout the sink or Spark has). Each class names the fault steps of the row that tries it, or none
when the harness cannot try it yet: a certificate lists every applicable class, and says which were
not tried.
"""

from __future__ import annotations

from dataclasses import replace

from harness.cluster.flink import HEARTBEAT_TIMEOUT_S
from harness.cluster.spark import NETWORK_TIMEOUT_S
from harness.driver.state_stores import DEFAULT_STATE_STORE, STATE_STORES
from harness.faults.fault_class import FaultClass, Observation, just_above
from harness.faults.flink_space import flink_space
from harness.faults.spec import TABLE, TRANSACTIONAL

BELOW_SHARE = 0.5  # "just below" a timeout: half of it, well inside
PARTITION_S = 10.0  # a partition that heals well inside every timeout (a short network split)
ROLES = ("driver", "executors")
MIN_BROKERS = 3  # the broker classes need replication 3 and min.insync.replicas 2
ISR_CUT_S = 30.0  # followers cut from their leader this long: past replica.lag.time.max.ms (10 s), the ISR shrinks


def space(seen: Observation) -> list[FaultClass]:
    """Every fault class that applies to what the baseline showed, in the order the matrix runs them."""
    classes: list[FaultClass] = []
    if seen.kind == TABLE:
        classes += _table(seen)
    elif seen.kind == TRANSACTIONAL:
        classes += _transactional(seen)
    else:
        classes += _plain(seen)
    classes += _any_sink()
    broker_classes = _brokers(seen)
    classes += broker_classes if seen.brokers >= MIN_BROKERS else [_untried_on(seen.brokers, c) for c in broker_classes]
    if seen.stateful:
        classes += _stateful()
    return classes if seen.engine == "spark" else flink_space(classes, seen)


def role_suffix(seen: Observation, point: str) -> list[tuple[str, str, str]]:
    """(sender role, spec suffix, name suffix) for each role that sent `point`: one class each when both
    did, else one for whichever did."""
    roles = sorted(seen.senders.get(point, ()))
    if len(roles) <= 1:
        return [("any" if not roles else roles[0], "", "")]
    return [(role, f"~{role}", f"-{role}") for role in roles]


def who(role: str) -> str:
    return "whoever sent it" if role == "any" else f"sent by the {role}"


def _transactional(seen: Observation) -> list[FaultClass]:
    timeout = seen.timeout_s
    below, above = round(timeout * BELOW_SHARE), just_above(timeout)
    out = []
    for point in ("txn.first_write", "txn.pre_commit", "txn.commit"):
        if point not in seen.senders:
            continue
        nth = 1 if point == "txn.commit" else 2  # the first commit is a data commit in every sink
        for target in ("sender", "executor", "driver"):  # only the sender depends on who sent the request
            for role, spec, suffix in role_suffix(seen, point) if target == "sender" else [("any", "", "")]:
                quick = (target, point) in {("sender", "txn.commit"), ("driver", "txn.pre_commit")}
                out.append(FaultClass("kill", target, point, role, "instant", f"kill-{target}-{point}{suffix}",
                                      (f"kill:{target}@{point}#{nth}{spec}",),
                                      f"SIGKILL the {target} at {point} ({who(role)})", quick))
    for link in ROLES:
        for point in ("txn.pre_commit", "txn.commit"):
            if point in seen.senders:
                out.append(FaultClass("partition", link, point, "any", f"{PARTITION_S:g}s",
                                      f"partition-{link}-{point}", (f"partition:{link}@{point}#2/{PARTITION_S:g}s",),
                                      f"cut the {link} link to Kafka for {PARTITION_S:g} s at {point} "
                                      "(below every timeout)"))
    if "txn.pre_commit" in seen.senders:
        out += [
            FaultClass("delay", "sender", "txn.pre_commit", "any", "above-txn-timeout",
                       "delay-endtxn-txn.pre_commit-long", (f"delay:sender@txn.pre_commit#2/{above}s",),
                       f"an EndTxn(commit) held {above} s, past the transaction timeout ({timeout:g} s): the "
                       "broker aborts, the commit fails, and the failure must not be ignored", quick=True),
            FaultClass("delay", "sender", "txn.pre_commit", "any", "below-txn-timeout",
                       "delay-endtxn-txn.pre_commit", (f"delay:sender@txn.pre_commit#2/{below}s",),
                       f"an EndTxn(commit) held {below} s, within the transaction timeout ({timeout:g} s)"),
            FaultClass("pause", "executor", "txn.pre_commit", "any", "above-network-timeout",
                       "pause-executor-txn.pre_commit",
                       (f"pause:executor@txn.pre_commit#2/{round(2 * NETWORK_TIMEOUT_S)}s",),
                       f"a zombie: the executor stops before its commit past {lost_after(seen)}, the task runs "
                       "again elsewhere, the zombie's commit goes out when it wakes", quick=True),
        ]
    if executors_write(seen, "txn.pre_commit"):
        out.append(_speculation(seen, "txn.pre_commit", "#3", "txn.first_write", "#3"))
    if "txn.commit" in seen.senders:
        out += [
            FaultClass("delay", "sender", "txn.commit", "any", "below-txn-timeout",
                       "delay-endtxn-txn.commit", (f"delay:sender@txn.commit#2/{below}s",),
                       f"a commit's response held {below} s: committed on the broker, the sink waits"),
            FaultClass("delay", "sender", "txn.commit", "any", "above-txn-timeout",
                       "lost-commit-response", (f"delay:sender@txn.commit#2/{above}s",),
                       f"a commit whose response is lost: committed on the broker, held {above} s, past the "
                       f"transaction timeout ({timeout:g} s) the sink's call waits; rewriting the batch without "
                       "checking what committed duplicates it", quick=True),
        ]
    return out


def _plain(seen: Observation) -> list[FaultClass]:
    out = []
    if "produce" not in seen.senders:
        return out
    for target in ("sender", "executor", "driver"):
        for role, spec, suffix in role_suffix(seen, "produce") if target == "sender" else [("any", "", "")]:
            out.append(FaultClass("kill", target, "produce", role, "instant", f"kill-{target}-produce{suffix}",
                                  (f"kill:{target}@produce#3{spec}",), f"SIGKILL the {target} at a produce "
                                  f"({who(role)})", quick=target != "executor"))
    out += [
        FaultClass("pause", "executor", "produce", "any", "above-network-timeout", "pause-executor-produce",
                   (f"pause:executor@produce#3/{round(2 * NETWORK_TIMEOUT_S)}s",),
                   f"two attempts of one task: the executor stops in the middle of its writes past "
                   f"{lost_after(seen)}, the task runs again elsewhere, the first attempt writes on when it wakes",
                   quick=True),
        FaultClass("partition", "executors", "produce", "any", f"{PARTITION_S:g}s",
                   "partition-executors-produce", (f"partition:executors@produce#3/{PARTITION_S:g}s",),
                   f"cut the executors link to Kafka for {PARTITION_S:g} s in the middle of their writes"),
    ]
    if executors_write(seen, "produce"):  # a task's first write: whatever it writes after, its copy writes too
        held = "produce.sent" if executors_write(seen, "produce.sent") else None
        out.append(_speculation(seen, held, "#1", "produce", "#1"))
    return out


def _table(seen: Observation) -> list[FaultClass]:
    """A table sink writes no Kafka: its commit point is the table's (a new version holding batch N, or a
    PostgreSQL commit answered while Spark runs batch N, before Spark's commit log has N:
    harness.run.table_watch), and whatever its store's own commits cross (PostgreSQL's wire)."""
    from harness.output.registry import store

    out = store(seen.output).fault_classes(seen)
    if "table.committed" not in seen.senders:
        return out
    return [*out, FaultClass("kill", "driver", "table.committed", "any", "instant", "kill-driver-table.committed",
                       ("kill:driver@table.committed:2",),
                       "SIGKILL the driver once batch 2 is committed to the table, before Spark's commit log has it: "
                       "the restarted query runs batch 2 again and must not commit it twice (the replay "
                       "apache/paimon#9666 reports for Paimon's sink)",
                       quick=True)]


def lost_after(seen: Observation) -> str:
    """The timeout after which the engine takes a silent executor for lost, in words (its pause rows hold past it)."""
    if seen.engine == "flink":
        return f"Flink's heartbeat timeout ({HEARTBEAT_TIMEOUT_S:g} s; the executor is a TaskManager)"
    return f"Spark's network timeout ({NETWORK_TIMEOUT_S:g} s)"


def executors_write(seen: Observation, point: str) -> bool:
    """Whether executors send `point` (or the senders are not known yet): a task's two attempts can only
    both write where tasks write; a sink that writes from the driver (collect, then produce) has none."""
    roles = seen.senders.get(point)
    return roles is not None and (not roles or "executors" in roles)


def _speculation(seen: Observation, held: str | None, nth: str, paused: str, pause_nth: str) -> FaultClass:
    """Two attempts of one task writing at once, spark.speculation on, tried two ways in turn.

    First, the gate holds one task's write (`held`: a transactional sink's commit, a plain sink's write to
    the output before the broker sees it) within every timeout. Only that task is slow: its executor and
    worker serve everything else (the shuffle blocks other tasks read, heartbeats), so the others finish,
    Spark runs a copy of the straggler elsewhere, and the held write lands after the copy's, whatever
    became of its task (a zombie commit or write). Second, when that is ineffective (no copy ran): the
    worker whose executor sent a write (`paused`) paused whole below Spark's network timeout, so the first
    attempt writes on when it wakes, before its executor can act on the order to kill it."""
    pause = round(NETWORK_TIMEOUT_S * 3 / 4)  # long enough for the copy to run, short of the executor's loss
    by_pause = (f"pause:worker@{paused}{pause_nth}~executors/{pause}s",)
    family = "produce" if paused == "produce" else held or paused
    if held is None:
        return FaultClass("pause", "worker", paused, "executors", "speculation", f"speculation-{family}", by_pause,
                          "two attempts of one task at once: spark.speculation on and a writing executor's worker "
                          f"paused {pause} s, so a copy of its task runs elsewhere and both write", quick=True,
                          speculation=True)
    hold = round(seen.timeout_s * BELOW_SHARE) if held.startswith("txn.") else round(NETWORK_TIMEOUT_S * 3 / 2)
    what = "its commit" if held.startswith("txn.") else "a write to the output"
    return FaultClass("delay", "sender", held, "executors", "speculation", f"speculation-{family}",
                      (f"delay:sender@{held}{nth}~executors/{hold}s",),
                      f"two attempts of one task at once: spark.speculation on and {what} held {hold} s at the gate, "
                      "so Spark runs a copy of the slow task elsewhere and the held write lands after the copy's "
                      f"(if no copy runs: its worker paused {pause} s instead)", quick=True, speculation=True,
                      ways=(by_pause,))


def _any_sink() -> list[FaultClass]:
    return [
        FaultClass("kill", "executor", "batch.planned", "any", "instant", "kill-executor-batch.planned",
                   ("kill:executor@batch.planned:2",), "SIGKILL an executor when batch 2 is planned"),
        FaultClass("kill", "driver", "batch.planned", "any", "instant", "kill-driver-batch.planned",
                   ("kill:driver@batch.planned:2",), "SIGKILL the driver when batch 2 is planned: the batch re-runs"),
        FaultClass("kill", "broker", "batch.planned", "any", "instant", "restart-broker",
                   ("kill:broker@batch.planned:2",),
                   "broker 1 killed in the middle of the stream and started again (at once on one broker, at "
                   "healing on several)"),
        FaultClass("rebatch", "input", "batch.planned", "any", "live", "live-baseline", (),
                   "the same input split into other batches: produced live, at a rate", live=True),
        FaultClass("kill", "driver", "batch.planned", "any", "live", "live-kill-driver-batch.planned",
                   ("kill:driver@batch.planned:2",), "a driver kill under live input", live=True),
        FaultClass("kill", "executor", "batch.planned", "any", "live", "live-kill-executor-batch.planned",
                   ("kill:executor@batch.planned:2",), "an executor kill under live input", live=True),
    ]


def _untried_on(brokers: int, fault: FaultClass) -> FaultClass:
    """A broker class on too few brokers: applicable (production Kafka has several), not tried."""
    return replace(fault, faults=(), quick=False,
                   what=f"{fault.what} (not tried: needs --brokers {MIN_BROKERS}, this run had {brokers})")


def _brokers(seen: Observation) -> list[FaultClass]:
    """Kafka as production runs it, several brokers: the coordinator, a leader or the controller fails in
    the middle of a transaction or a batch, or a leader's followers fall out of its ISR."""
    write = "txn.first_write" if seen.kind == TRANSACTIONAL else "produce"
    out = []
    if seen.kind == TRANSACTIONAL:
        for point, nth, when in (("txn.pre_commit", 2, "as a commit is asked of it"),
                                 ("txn.commit", 1, "once it committed, before the sink heard")):
            if point in seen.senders:
                out.append(FaultClass("kill", "coordinator", point, "any", "failover", f"kill-coordinator-{point}",
                                      (f"kill:coordinator@{point}#{nth}",),
                                      f"SIGKILL the transaction coordinator {when}: another broker takes the "
                                      "transaction over and the commit is retried against it", quick=True,
                                      brokers=MIN_BROKERS))
        if "txn.pre_commit" in seen.senders:
            out.append(FaultClass("isolate", "coordinator", "txn.pre_commit", "any", "failover",
                                  "isolate-coordinator-txn.pre_commit", ("isolate:coordinator@txn.pre_commit#2/30s",),
                                  "the coordinator cut off the network for 30 s as a commit is asked: it loses the "
                                  "transaction log's leadership, then comes back", brokers=MIN_BROKERS))
    if write in seen.senders:
        out += [
            FaultClass("partition", "leader", write, "any", "20s", f"partition-leader-{write}",
                       (f"partition:leader@{write}#2/20s",),
                       "the links to the leader of the partition being written cut for 20 s at a first write",
                       brokers=MIN_BROKERS),
            FaultClass("partition", "followers", write, "any", "isr-shrink", f"isr-shrink-{write}",
                       (f"partition:followers@{write}#2/{ISR_CUT_S:g}s",),
                       f"a leader's followers cut from it for {ISR_CUT_S:g} s at a write: its ISR shrinks below "
                       "min.insync.replicas=2 and writes fail with NOT_ENOUGH_REPLICAS until it heals",
                       quick=True, brokers=MIN_BROKERS),
        ]
    out.append(FaultClass("kill", "controller", "batch.planned", "any", "failover", "kill-controller-batch.planned",
                          ("kill:controller@batch.planned:2",),
                          "SIGKILL the active KRaft controller (a broker too) when batch 2 is planned",
                          brokers=MIN_BROKERS))
    return out


def _stateful() -> list[FaultClass]:
    out = []
    for store in STATE_STORES:
        suffix = "" if store == DEFAULT_STATE_STORE else f"-{store}"
        for target in ("driver", "executor"):
            quick = (target, store) in {("driver", DEFAULT_STATE_STORE), ("executor", "rocksdb-changelog")}
            out.append(FaultClass("kill", target, "state.committed", "any", f"store-{store}",
                                  f"kill-{target}-state.committed{suffix}", (f"kill:{target}@state.committed:3",),
                                  f"SIGKILL the {target} once batch 3's state is saved, its output not yet "
                                  f"(state store {store})", quick, state_store=store))
    return out
