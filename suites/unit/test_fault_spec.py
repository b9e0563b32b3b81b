"""The fault grammar: every documented form parses, round-trips, serializes; errors name the bad token."""

import json
import threading

import pytest

from harness.errors import BadInput
from harness.faults.schedule import Schedule
from harness.faults.spec import (
    FaultStep,
    parse_schedule,
    parse_step,
    random_nemesis,
    random_schedule,
    schedule_from_json,
    schedule_to_json,
)
from harness.history import History

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "spec, step",
    [
        ("kill:sender@txn.pre_commit#2", FaultStep("kill", "sender", "txn.pre_commit", nth=2)),
        ("kill:driver@batch.committed:3", FaultStep("kill", "driver", "batch.committed", number=3)),
        ("kill:driver@table.committed:2", FaultStep("kill", "driver", "table.committed", number=2)),
        ("partition:executors@txn.commit/10s", FaultStep("partition", "executors", "txn.commit", duration=10)),
        ("pause:executor@txn.pre_commit/40s", FaultStep("pause", "executor", "txn.pre_commit", duration=40)),
        ("delay:sender@txn.commit/500ms", FaultStep("delay", "sender", "txn.commit", duration=0.5)),
        ("stop:sender@produce#3~executors", FaultStep("stop", "sender", "produce", nth=3, role="executors")),
        ("kill:broker@time:20", FaultStep("kill", "broker", "time", number=20)),
        ("isolate:worker@batch.planned:2/5s", FaultStep("isolate", "worker", "batch.planned", number=2, duration=5)),
        ("then kill:driver@txn.first_write#2", FaultStep("kill", "driver", "txn.first_write", nth=2, after=True)),
        ("kill:coordinator@txn.commit#2", FaultStep("kill", "coordinator", "txn.commit", nth=2)),
        ("partition:leader@txn.first_write#3/20s", FaultStep("partition", "leader", "txn.first_write", nth=3,
                                                             duration=20)),
        ("isolate:coordinator@txn.pre_commit#2/30s", FaultStep("isolate", "coordinator", "txn.pre_commit", nth=2,
                                                               duration=30)),
        ("kill:controller@batch.planned:2", FaultStep("kill", "controller", "batch.planned", number=2)),
        ("stop:broker:3@time:20", FaultStep("stop", "broker:3", "time", number=20)),
        ("partition:followers@txn.first_write#2/30s", FaultStep("partition", "followers", "txn.first_write", nth=2,
                                                                duration=30)),
        ("kill:sender@pg.commit#2~driver", FaultStep("kill", "sender", "pg.commit", nth=2, role="driver")),
        ("partition:executors@pg.commit#3/10s", FaultStep("partition", "executors", "pg.commit", nth=3,
                                                          duration=10)),
        ("drop:sender@pg.commit#2", FaultStep("drop", "sender", "pg.commit", nth=2)),
        ("delay:sender@pg.commit/15s", FaultStep("delay", "sender", "pg.commit", duration=15)),
        ("pause:executor@pg.commit#2/120s", FaultStep("pause", "executor", "pg.commit", nth=2, duration=120)),
    ],
)
def test_documented_forms_parse_and_round_trip(spec: str, step: FaultStep) -> None:
    assert parse_step(spec) == step
    assert parse_step(str(step)) == step


@pytest.mark.parametrize(
    "spec, token",
    [
        ("explode:driver@produce", "unknown action 'explode'"),
        ("kill:toaster@produce", "unknown target 'toaster'"),
        ("kill:driver@txn.precommit", "unknown point 'txn.precommit'"),
        ("kill:driver@produce#0", "bad occurrence '#0'"),
        ("kill:driver@produce#x", "bad occurrence '#x'"),
        ("pause:executor@produce", "'pause' needs a duration"),
        ("kill:driver@produce/10s", "'kill' takes no duration"),
        ("pause:executor@produce/10 minutes", "bad duration '10 minutes'"),
        ("kill:sender@batch.committed:3", "target 'sender' needs a gate point"),
        ("kill:driver@txn.commit:3", "'3' after 'txn.commit'"),
        ("kill:driver@time", "'time' needs the seconds"),
        ("kill:driver@produce~workers", "bad role filter '~workers'"),
        ("partition:worker@txn.commit/5s", "'partition' cuts links"),
        ("delay:driver@txn.commit/5s", "'delay' delays the matched request"),
        ("kill:executors@produce", "target 'executors' is a link"),
        ("kill-driver", "expected [then ]ACTION:TARGET@POINT"),
        ("then kill:broker@time:20", "'then' counts occurrences of a point"),
        ("kill:broker:0@time:20", "bad broker '0'"),
        ("kill:broker:two@time:20", "bad broker 'two'"),
        ("kill:broker:²@time:20", "bad broker '²'"),
        ("kill:followers@txn.commit", "'followers' is cut from their leader"),
        ("drop:sender@txn.commit", "'drop' drops a commit's response"),
        ("drop:driver@pg.commit", "'drop' drops a commit's response"),
        ("drop:sender@pg.commit/5s", "'drop' takes no duration"),
        ("partition:broker@pg.commit/10s", "cuts a role's link to its server"),
        ("kill:coordinator@pg.commit", "no Kafka request at pg.commit names a coordinator"),
        ("kill:driver@pg.commit:2", "'2' after 'pg.commit'"),
    ],
)
def test_errors_name_the_bad_token(spec: str, token: str) -> None:
    with pytest.raises(BadInput, match="fault spec") as error:
        parse_step(spec)
    assert token in str(error.value)


def test_then_needs_a_step_before_it() -> None:
    with pytest.raises(BadInput, match="'then' needs a step before it"):
        parse_schedule(["then kill:driver@txn.commit", "kill:driver@txn.first_write"])


def test_a_then_step_counts_occurrences_only_after_the_step_before_it_was_carried_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")
    schedule = Schedule(parse_schedule(["kill:driver@txn.commit#2", "then kill:driver@txn.first_write#2",
                                        "kill:executor@txn.first_write#2"]), None, history)  # type: ignore[arg-type]
    points = ["txn.first_write", "txn.first_write", "txn.commit", "txn.first_write", "txn.commit", "txn.first_write"]
    fired = [schedule._match(point, "executors", None) for point in points]
    assert fired == [None, 2, None, None, 0, None]  # the 2nd commit fires the kill ...
    schedule.done.add(0)  # ... which is carried out (the driver replaced) only now: the write before did not count
    assert [schedule._match("txn.first_write", "executors", None) for _ in range(2)] == [None, 1]
    schedule.close()
    history.close()


def test_a_postgres_commit_is_counted_as_it_arrives_and_by_a_drop_step_as_it_is_answered(tmp_path) -> None:  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")
    schedule = Schedule(parse_schedule(["kill:sender@pg.commit#2", "drop:sender@pg.commit#2"]), None,
                        history)  # type: ignore[arg-type]
    phases = [False, True, False, True]  # two commits, each on its way in, then answered
    assert [schedule._match("pg.commit", "driver", None, answered) for answered in phases] == [None, None, 0, 1]
    schedule.close()
    history.close()


def test_a_step_is_carried_out_when_the_nemesis_returns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")
    injected = threading.Event()

    class StandInNemesis:
        def inject(self, step, event, hold) -> None:  # type: ignore[no-untyped-def]
            assert injected.wait(5)

    schedule = Schedule(parse_schedule(["kill:driver@batch.planned:1", "then kill:driver@batch.planned:2"]),
                        StandInNemesis(), history)  # type: ignore[arg-type]
    schedule.on_batch({"type": "batch.planned", "batch": 1})
    assert 0 in schedule.fired and schedule.done == set()  # fired; its driver not replaced yet
    injected.set()
    schedule.close()  # waits for the nemesis
    assert schedule.done == {0}
    schedule.close()
    history.close()


def test_a_flink_checkpoint_s_step_fires_on_that_checkpoint_s_batch_event_in_its_own_words(tmp_path) -> None:  # type: ignore[no-untyped-def]
    history = History(tmp_path / "history.jsonl")

    class StandInNemesis:
        def inject(self, step, event, hold) -> None:  # type: ignore[no-untyped-def]
            pass

    schedule = Schedule(parse_schedule(["kill:driver@checkpoint.completed:2"]), StandInNemesis(), history)  # type: ignore[arg-type]
    schedule.on_batch({"type": "batch.planned", "batch": 2})  # triggered, not completed
    schedule.on_batch({"type": "batch.committed", "batch": 1})
    assert schedule.fired == {}
    schedule.on_batch({"type": "batch.committed", "batch": 2})
    assert 0 in schedule.fired
    schedule.close()
    history.close()
    events = map(json.loads, (tmp_path / "history.jsonl").read_text().splitlines())
    triggers = [e for e in events if e["type"] == "trigger"]
    assert [e["point"] for e in triggers] == ["checkpoint.completed"]


def test_schedules_serialize_and_replay() -> None:
    steps = parse_schedule(["kill:sender@txn.pre_commit#2", "partition:driver@txn.commit/10s"])
    assert schedule_from_json(schedule_to_json(steps)) == steps


def test_random_schedules_are_seeded_and_valid() -> None:
    assert random_schedule(7, 5) == random_schedule(7, 5)
    assert random_schedule(7, 5) != random_schedule(8, 5)
    for seed in range(50):
        for step in random_schedule(seed, 3, transactional=seed % 2 == 0):
            assert parse_step(str(step)) == step
    table = [step for seed in range(50) for step in random_schedule(seed, 3, table=True)]
    assert {step.point for step in table} == {"table.committed", "batch.planned", "batch.committed"}
    assert all(parse_step(str(step)) == step for step in table)
    postgres = [step for seed in range(80) for step in random_schedule(seed, 3, table=True, points=("pg.commit",))]
    assert {step.point for step in postgres} == {"pg.commit", "table.committed", "batch.planned", "batch.committed"}
    assert "drop" in {step.action for step in postgres} and all(parse_step(str(step)) == step for step in postgres)


def test_a_random_nemesis_is_seeded_spread_over_the_run_and_parses() -> None:
    assert random_nemesis(3, 60) == random_nemesis(3, 60)
    assert random_nemesis(3, 60) != random_nemesis(4, 60)
    counts = [len(random_nemesis(seed, 100, every=10)) for seed in range(200)]
    assert 8 <= sum(counts) / len(counts) <= 12, "about one fault every 10 s"
    assert min(counts) >= 1, "never an empty schedule, even for a short run"
    for seed in range(50):
        steps = random_nemesis(seed, 30)
        assert [s.number for s in steps] == sorted(s.number for s in steps)
        for step in steps:
            assert step.point == "time" and 0 <= (step.number or 0) <= 30
            assert (step.action, step.target) in {("kill", "executor"), ("kill", "driver"),
                                                  ("pause", "executor"), ("pause", "driver")}
            assert parse_step(str(step)) == step


@pytest.mark.parametrize(
    "spec, token",
    [
        ("kill:driver@batch.planned:nan", "bad batch id 'nan'"),
        ("kill:driver@batch.planned:inf", "bad batch id 'inf'"),
        ("kill:driver@batch.committed:-1", "bad batch id '-1'"),
        ("kill:driver@batch.planned:1.5", "bad batch id '1.5'"),
        ("kill:driver@time:nan", "bad seconds 'nan'"),
        ("kill:driver@time:inf", "bad seconds 'inf'"),
        ("kill:driver@time:-1", "bad seconds '-1'"),
        ("kill:driver@produce#-1", "bad occurrence '#-1'"),
        ("kill:driver@produce#1.5", "bad occurrence '#1.5'"),
        ("kill:driver@produce#nan", "bad occurrence '#nan'"),
        ("pause:driver@produce/0s", "bad duration '0s'"),
        ("pause:driver@produce/nans", "bad duration 'nans'"),
        ("pause:driver@produce/infs", "bad duration 'infs'"),
        ("pause:driver@produce/-1s", "bad duration '-1s'"),
        ("kill:driver@produce#²", "bad occurrence '#²'"),  # a digit to str.isdigit(), not to int()
        ("kill:driver@produce#٣", "bad occurrence '#٣'"),  # a digit to int(): ASCII digits only all the same
        ("kill:driver@batch.planned:²", "bad batch id '²'"),
        ("kill:driver@batch.planned:1e3", "bad batch id '1e3'"),
        ("kill:driver@time:٣", "bad seconds '٣'"),
        ("kill:driver@time:1_0", "bad seconds '1_0'"),
        ("kill:driver@time:86401", "bad seconds '86401' after 'time' (a finite number from 0 to 86400"),
        ("kill:driver@time:100000000000000", "bad seconds '1e+14'"),
        ("kill:driver@txn.commit:²", "bad number '²' (ASCII digits"),
        ("pause:driver@produce/٣s", "bad duration '٣s'"),
        ("pause:driver@produce/100000000000000s", "bad duration '1e+14s' (more than 0, at most 86400s"),
        ("pause:driver@produce/86400001ms", "bad duration '86400.001s'"),
    ],
)
def test_numbers_a_fault_would_never_fire_on_are_refused_with_what_to_write(spec: str, token: str) -> None:
    with pytest.raises(BadInput, match="fault spec") as error:
        parse_step(spec)
    assert token in str(error.value) and "e.g." in str(error.value)


@pytest.mark.parametrize(
    "saved, token",
    [
        ([{"action": "kill", "target": "driver", "point": "batch.planned", "number": float("nan")}], "bad batch id"),
        ([{"action": "kill", "target": "driver", "point": "time", "number": float("inf")}], "bad seconds 'inf'"),
        ([{"action": "kill", "target": "driver", "point": "produce", "nth": 0}], "bad occurrence '#0'"),
        ([{"action": "kill", "target": "driver", "point": "produce", "nth": 1.5}], "bad occurrence '#1.5'"),
        ([{"action": "pause", "target": "driver", "point": "produce", "duration": -1}], "bad duration '-1s'"),
        ([{"action": "pause", "target": "driver", "point": "produce", "duration": 1e14}], "at most 86400s"),
        ([{"action": "kill", "target": "driver", "point": "time", "number": 1e14}], "bad seconds '1e+14'"),
        ([{"action": "kill", "target": 7, "point": "produce"}], "are text"),
        ([{"action": "kill", "target": "driver", "point": "produce", "after": True}], "'then' needs a step before it"),
        ({"action": "kill"}, "a JSON list of steps"),
    ],
)
def test_a_saved_schedule_is_checked_as_specs_are(saved: object, token: str) -> None:
    with pytest.raises(BadInput) as error:
        schedule_from_json(json.dumps(saved))
    assert token in str(error.value)


@pytest.mark.parametrize("spec", ["kill:sender@s3.put#3", "drop:sender@catalog.commit#2",
                                  "partition:driver@catalog.commit/10s", "delay:sender@s3.put#2/5s"])
def test_http_commit_points_are_steps(spec: str) -> None:
    assert str(parse_step(spec)) == spec


def test_a_partition_at_an_http_point_cuts_a_role_s_link() -> None:
    with pytest.raises(BadInput, match="at s3.put 'partition' cuts a role's link to its server"):
        parse_step("partition:broker@s3.put/10s")


def test_a_fail_step_answers_an_http_commit_with_a_status() -> None:
    step = parse_step("fail:sender@catalog.commit#2/503")
    assert (step.action, step.status, step.duration) == ("fail", 503, None)
    assert str(step) == "fail:sender@catalog.commit#2/503"
    for bad in ("fail:sender@catalog.commit/10s", "fail:sender@catalog.commit/200", "fail:sender@pg.commit/503",
                "fail:driver@s3.put/503", "fail:sender@s3.put"):
        with pytest.raises(BadInput, match="'fail' answers"):
            parse_step(bad)


def test_a_fail_step_may_say_when_to_try_again() -> None:
    step = parse_step("fail:sender@catalog.commit#2/503,retry-after=1")
    assert (step.status, step.retry_after) == (503, 1)
    assert str(step) == "fail:sender@catalog.commit#2/503,retry-after=1"
    assert parse_schedule([str(step)]) == [step] == schedule_from_json(schedule_to_json([step]))
    for bad in ("fail:sender@catalog.commit#2/503,retry-after=1.5", "fail:sender@catalog.commit#2/503,retry=1",
                "fail:sender@catalog.commit#2/503,retry-after=86401"):
        with pytest.raises(BadInput, match="retry-after=N"):
            parse_step(bad)
