"""The fault space: drawn from what a baseline showed (points and the roles that sent them, the sink's
transaction timeout, state), one row per class, and a certificate that says certified only when every
applicable class was tried and passed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.certify.certificate import NOT_TRIED, coverage, verdict
from harness.certify.matrix import BASELINE, BROKER_MATRIX, MATRIX, SPLIT_BY_ROLE, rows_for
from harness.certify.rows import Row
from harness.faults.fault_class import ABOVE_MARGIN_S
from harness.faults.space import Observation, space
from harness.faults.spec import PLAIN, TABLE, TRANSACTIONAL, parse_step

pytestmark = pytest.mark.unit


def point(name: str, role: str, **fields: object) -> dict:
    return {"type": "point", "point": name, "role": role, **fields}


EXECUTOR_TXN = [point("txn.init", "executors", transaction_timeout_ms=60_000), point("txn.first_write", "executors"),
                point("txn.pre_commit", "executors"), point("txn.commit", "executors")]


def test_the_space_follows_what_the_baseline_showed() -> None:
    seen = Observation.from_events([*EXECUTOR_TXN, {"type": "batch.planned"}], stateful=False)
    assert (seen.kind, seen.transaction_timeout_s, seen.stateful) == (TRANSACTIONAL, 60.0, False)
    rows = {c.row: c for c in space(seen)}
    assert "lost-commit-response" in rows and "speculation-txn.pre_commit" in rows
    assert not [r for r in rows if "produce" in r or "state." in r]
    for fault in space(seen):  # every row is a valid schedule
        for spec in fault.faults:
            parse_step(spec)
    plain = {c.row for c in space(Observation.from_events([point("produce", "executors")], stateful=True))}
    assert {"pause-executor-produce", "speculation-produce", "kill-driver-state.committed-rocksdb"} <= plain
    assert not [r for r in plain if "txn." in r]


def test_timing_classes_come_from_the_sinks_own_timeout() -> None:
    short = Observation.from_events([point("txn.init", "executors", transaction_timeout_ms=10_000),
                                     point("txn.pre_commit", "executors"), point("txn.commit", "executors")], False)
    faults = {c.row: c.faults for c in space(short)}
    assert faults["delay-endtxn-txn.pre_commit-long"] == ("delay:sender@txn.pre_commit#2/15s",)  # just above 10 s
    assert faults["delay-endtxn-txn.pre_commit"] == ("delay:sender@txn.pre_commit#2/5s",)  # well below
    assert faults["lost-commit-response"] == ("delay:sender@txn.commit#2/15s",)
    unseen = Observation.from_events([point("txn.commit", "driver")], False)  # no InitProducerId: the default
    assert {c.row: c.faults for c in space(unseen)}["lost-commit-response"] == ("delay:sender@txn.commit#2/65s",)


def test_just_above_a_timeout_leaves_room_for_the_brokers_abort(broker_setting: Callable[[str], int]) -> None:
    """The broker aborts a timed-out transaction when it next looks for one: a hold past the timeout must
    outlast that look, with room to spare on a loaded machine."""
    interval_ms = broker_setting("transaction.abort.timed.out.transaction.cleanup.interval.ms")
    assert ABOVE_MARGIN_S >= 4 * interval_ms / 1000


def test_a_point_both_roles_send_gives_each_role_its_own_sender_class() -> None:
    both = Observation.from_events([*EXECUTOR_TXN, point("txn.commit", "driver")], False)
    rows = {c.row: c for c in space(both)}
    assert rows["kill-sender-txn.commit-driver"].faults == ("kill:sender@txn.commit#1~driver",)
    assert rows["kill-sender-txn.commit-executors"].faults == ("kill:sender@txn.commit#1~executors",)
    assert "kill-executor-txn.commit" in rows  # the other targets do not depend on who sent the request


@pytest.mark.parametrize("events", [[*EXECUTOR_TXN, point("txn.commit", "driver"), point("txn.first_write", "driver")],
                                    [point("produce", "driver"), point("produce", "executors")]])
def test_the_sink_matrix_test_ids_name_every_row_a_sink_can_get(events: list[dict]) -> None:
    """`pytest --sink` fixes its test ids before the baseline: the role-split rows must be among them."""
    listed = {row.name for row in MATRIX + SPLIT_BY_ROLE}
    for stateful in (False, True):
        assert {row.name for row in rows_for(Observation.from_events(events, stateful), quick=False)} <= listed


@pytest.mark.parametrize("kind", [TRANSACTIONAL, PLAIN])
def test_the_quick_subset_tries_each_kind_of_fault_users_sinks_meet(kind: str) -> None:
    quick = {row.name for row in rows_for(Observation.assumed(kind, stateful=True), quick=True)}
    assert any(name.startswith("speculation-") for name in quick)  # two attempts at once
    assert "pause-executor-produce" in quick if kind == PLAIN else "lost-commit-response" in quick
    assert "kill-driver-state.committed" in quick


def test_on_one_broker_the_broker_classes_apply_and_are_not_tried() -> None:
    one, three = (Observation.from_events(EXECUTOR_TXN, False, brokers) for brokers in (1, 3))
    untried = [c for c in space(one) if not c.tried]
    assert [c.row for c in untried] == [c.row for c in space(three) if c.brokers > 1] and len(untried) == 6
    assert all("needs --brokers 3, this run had 1" in c.what for c in untried)
    every = [Row(BASELINE, "pass", {}, 1.0, "")] + [Row(r, "pass", {}, 1.0, "") for r in rows_for(one, False)]
    assert verdict(coverage(one, every), every, quick=False) == ("not certified: passed 25 of 31 applicable fault "
                                                                 "classes, 6 not tried")


def test_certified_only_when_every_applicable_class_was_tried_and_passed() -> None:
    seen = Observation.from_events(EXECUTOR_TXN, False, brokers=3)
    every = [Row(BASELINE, "pass", {}, 1.0, "")] + [Row(r, "pass", {}, 1.0, "") for r in rows_for(seen, False)]
    quick = [Row(BASELINE, "pass", {}, 1.0, "")] + [Row(r, "pass", {}, 1.0, "") for r in rows_for(seen, True)]
    classes = coverage(seen, every)
    assert verdict(classes, every, quick=False) == f"certified exactly-once under {len(classes)} of {len(classes)} " \
                                                   "applicable fault classes"
    tried = coverage(seen, quick)
    passed = sum(c["outcome"] == "pass" for c in tried)
    assert 0 < passed < len(tried) and sum(c["outcome"] == NOT_TRIED for c in tried) == len(tried) - passed
    assert verdict(tried, quick, quick=True).startswith(f"quick: passed {passed} of {len(tried)}")
    assert verdict(tried, quick, quick=False).startswith("not certified")  # a full run that skipped classes
    failed = [*every[:-1], Row(every[-1].scenario, "fail", {"duplicate": 1}, 1.0, "")]
    assert verdict(coverage(seen, failed), failed, quick=False).startswith("not certified")


def test_a_sink_that_writes_from_the_driver_has_no_concurrent_task_attempts_to_try() -> None:
    driver = Observation.from_events([point("txn.init", "driver", transaction_timeout_ms=60_000),
                                      point("txn.first_write", "driver"), point("txn.commit", "driver")], False)
    assert not [c for c in space(driver) if c.speculation]
    assert [c.row for c in space(Observation.from_events(EXECUTOR_TXN, False)) if c.speculation] == [
        "speculation-txn.pre_commit"]


def test_two_attempts_at_once_are_tried_by_a_held_write_first_then_by_a_paused_worker() -> None:
    """Holding one task's write at the gate leaves its worker serving shuffle blocks, so the other tasks
    finish and Spark copies the straggler; a paused worker is the second way."""
    [txn] = [c for c in space(Observation.from_events(EXECUTOR_TXN, False)) if c.speculation]
    assert txn.faults == ("delay:sender@txn.pre_commit#3~executors/30s",)  # within the 60 s transaction timeout
    assert txn.ways == (("pause:worker@txn.first_write#3~executors/15s",),)
    sent = [point("produce", "executors"), point("produce.sent", "executors")]
    [plain] = [c for c in space(Observation.from_events(sent, False)) if c.speculation]
    assert plain.row == "speculation-produce" and plain.faults == ("delay:sender@produce.sent#1~executors/30s",)
    assert plain.ways == (("pause:worker@produce#1~executors/15s",),)
    [paused] = [c for c in space(Observation.from_events([point("produce", "executors")], False)) if c.speculation]
    assert (paused.faults, paused.ways) == (("pause:worker@produce#1~executors/15s",), ())  # no output write seen
    for fault in (txn, plain, paused):
        for way in (fault.faults, *fault.ways):
            [parse_step(spec) for spec in way]


def pg_commit(role: str, phase: str = "request") -> dict:
    return point("pg.commit", role, phase=phase)


def test_a_postgres_sinks_space_is_drawn_from_the_roles_that_sent_its_commits() -> None:
    """foreachBatch commits from the driver, df.write.jdbc from the executors: a zombie commit (an executor
    paused as it commits) only where executors commit; a commit's answer counted once, as it arrives."""
    driver = Observation.from_events([pg_commit("driver"), pg_commit("driver", "response"),
                                      {"type": "table.committed", "point": True, "role": "driver", "batch": 1}],
                                     stateful=False, output="postgres")
    assert (driver.kind, driver.counts["pg.commit"], driver.senders["table.committed"]) == (
        TABLE, 1, frozenset({"driver"}))
    rows = {c.row: c for c in space(driver)}
    assert rows["lost-pg-commit-response"].faults == ("drop:sender@pg.commit#2",)
    assert rows["kill-sender-pg.commit"].faults == ("kill:sender@pg.commit#2",)
    assert rows["partition-driver-pg.commit"].faults == ("partition:driver@pg.commit#2/10s",)
    assert "kill-driver-table.committed" in rows and "pause-executor-pg.commit" not in rows
    assert not [r for r in rows if "txn." in r or "produce" in r]
    executors = {c.row for c in space(Observation.from_events([pg_commit("executors")], False, output="postgres"))}
    assert {"pause-executor-pg.commit", "partition-executors-pg.commit"} <= executors
    for fault in [*space(driver), *space(Observation.assumed(TABLE, False, output="postgres"))]:
        for spec in fault.faults:
            parse_step(spec)


def test_an_observation_keeps_its_output_through_a_shards_certificate() -> None:
    seen = Observation.from_events([pg_commit("executors")], stateful=False, output="postgres")
    assert Observation.from_dict(seen.to_dict()) == seen and Observation.from_dict(seen.to_dict()).kind == TABLE


@pytest.mark.parametrize(("output", "point"), [("iceberg", "catalog.commit"), ("delta", "s3.put")])
def test_a_dry_run_names_the_rows_certify_runs_for_a_table_on_s3(output: str, point: str,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """What a baseline on S3 shows (the driver commits the table, through the gate's HTTP point), the dry run
    assumes: its plan names every row the real certification draws from it, and no Kafka or PostgreSQL row."""
    from harness.certify.certification import print_plan
    from harness.subject.code_spec import resolve_sink
    from harness.subject.pipeline import load_pipeline

    baseline = Observation({"table.committed": frozenset({"driver"}), point: frozenset({"driver"})}, None, False,
                           output=output)
    for quick in (True, False):
        print_plan(resolve_sink(f"{output}_streaming"), load_pipeline("passthrough"), quick, output, "s3")
        plan = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
        drawn = {row.name for row in rows_for(baseline, quick)}
        assert drawn <= plan and any(point in name for name in drawn), (drawn - plan)
        assert not any("txn." in name or "pg.commit" in name or "produce" in name for name in plan), plan


def table_places() -> list[tuple[str, str]]:
    from harness.output.registry import table_stores

    return [(table.name, where) for table in table_stores() for where in table.stores]


@pytest.mark.parametrize(("output", "where"), [("kafka", "volume"), *table_places()])
def test_certify_its_dry_run_and_pytest_sink_plan_the_same_rows(output: str, where: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Every row certify draws from a baseline (as a dry run assumes it, stateful or not) is named by the dry
    run and is a test id of `pytest --sink`, for every output and store."""
    from harness.certify.certification import print_plan
    from harness.sink_matrix import matrix_rows
    from harness.subject.code_spec import resolve_sink
    from harness.subject.pipeline import load_pipeline

    kinds = (TRANSACTIONAL, PLAIN) if output == "kafka" else (TABLE,)
    drawn = {row.name for kind in kinds for stateful in (False, True) for brokers in (1, 3)
             for row in rows_for(Observation.assumed(kind, stateful, brokers, output, where), quick=False)}
    print_plan(resolve_sink("transactional"), load_pipeline("passthrough"), False, output, where)
    planned = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    ids = {row.name for row in matrix_rows(output, where)}
    assert drawn - {row.name for row in BROKER_MATRIX} <= planned, drawn - planned
    assert drawn <= ids, drawn - ids
