"""Explore's combinations, their order and the coverage store: pure logic, no cluster."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from harness import versions
from harness.certify.rows import MatrixRun
from harness.explore.combinations import OCCURRENCE, PAIR, RATE, SEED, combinations
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import ordered, same_target, subject_of
from harness.faults.space import Observation, space
from harness.faults.spec import parse_step

pytestmark = pytest.mark.unit


def executor_txn(batches: int = 6, tasks: int = 4) -> Observation:
    events = [{"type": "point", "point": "txn.init", "role": "executors", "transaction_timeout_ms": 60_000}]
    for point in ("txn.first_write", "txn.pre_commit", "txn.commit"):
        events += [{"type": "point", "point": point, "role": "executors"}] * (batches * tasks)
    return Observation.from_events(events, stateful=False)


def test_combinations_reach_past_the_certificate_rows() -> None:
    seen = executor_txn()
    found = combinations(seen, batches=6, records=10_000)
    tiers = Counter(c.tier for c in found)
    assert tiers[OCCURRENCE] and tiers[PAIR] and tiers[RATE] and tiers[SEED]
    assert len({c.key for c in found}) == len(found)  # one key, one combination
    assert {c.rate for c in found if c.tier == RATE} == {167.0, 500.0}  # 10,000 records over 60 s and 20 s
    certificate = {f.faults for f in space(seen) if f.tried}
    occurrences = [c for c in found if c.tier == OCCURRENCE]
    assert not [c for c in occurrences if c.faults in certificate]  # other occurrences only
    assert [parse_step(c.faults[0]).nth for c in occurrences if c.faults[0].startswith("kill:sender@txn.commit")] \
        == [24, 12, 19, 7, 15, 3, 23, 11, 2]  # of the 24 commits the baseline showed: early, middle, late and
    # one in each batch of four (3, 7, ..., 23), farthest first
    for combination in found:  # every one is a valid schedule (none for the live baseline) and names its classes
        assert combination.classes
        assert combination.faults or combination.live
        for spec in combination.faults:
            parse_step(spec)


def test_a_pair_puts_the_second_fault_in_the_recovery_from_the_first() -> None:
    pairs = {c.faults for c in combinations(executor_txn(), 6, 10_000) if c.tier == PAIR}
    assert ("kill:driver@txn.pre_commit#2", "then kill:executor@txn.pre_commit") in pairs
    assert ("kill:executor@batch.planned:2", "then kill:driver@batch.planned") in pairs


def test_least_tried_first_tiers_and_classes_take_turns() -> None:
    found = combinations(executor_txn(), 6, 10_000)
    first = ordered(found, Counter())
    assert [c.tier for c in first[:8]] == [OCCURRENCE, PAIR, RATE, SEED] * 2
    occurrences = [c for c in first if c.tier == OCCURRENCE]
    assert len({c.classes for c in occurrences[:5]}) == 5  # five classes before a second occurrence of one
    pairs = [c for c in first if c.tier == PAIR]
    same = [same_target(c) for c in pairs]
    assert same.index(False) == same.count(True)  # a second fault to what recovers from the first, first
    assert ordered(found, Counter(), seed=2) != first  # the pairs' order is the seed's
    assert ordered(found, Counter(), seed=1) == first
    tried = Counter({c.key: 1 for c in first[:10]})
    again = ordered(found, tried)
    assert not {c.key for c in again[:len(found) - 10]} & set(tried)  # what ran comes last


def test_a_round_over_the_classes_faults_every_batch() -> None:
    """Five batches of four tasks: the first, middle and last occurrences all sit in even batches (0, 2, 4),
    where a sink that skips its markers in odd batches survives. Each batch has an occurrence of its own,
    and the classes' first turns spread over the batches rather than all faulting the last one."""
    found = combinations(executor_txn(batches=5), 5, 10_000)
    batch = {c.key: (parse_step(c.faults[0]).nth - 1) // 4 for c in found
             if c.tier == OCCURRENCE and parse_step(c.faults[0]).nth is not None}
    kills = [c for c in found if c.tier == OCCURRENCE and c.faults[0].startswith("kill:driver@txn.commit")]
    assert {batch[c.key] for c in kills} == {0, 1, 2, 3, 4}
    first_round = [c for c in ordered(found, Counter()) if c.key in batch][:9]  # the nine kill classes' first
    assert len({c.classes for c in first_round}) == 9
    assert {batch[c.key] for c in first_round} == {0, 1, 2, 3, 4}


def test_the_store_widens_across_runs_and_subjects_stay_apart(tmp_path: Path) -> None:
    store = CoverageStore(tmp_path)
    store.add("s1", "kill:a", ("kill:a/instant",), "pass", {}, 60.0, "r/1")
    store.add("s1", "kill:a", ("kill:a/instant",), "pass", {}, 61.0, "r/2")
    store.add("s1", "kill:b + kill:c", ("kill:b/instant", "kill:c/instant"), "fail", {"duplicate": 3}, 70.0, "r/3")
    store.add("s1", "kill:d", ("kill:d/instant",), "ineffective", {}, 50.0, "r/4")  # did not fire: not covered
    again = CoverageStore(tmp_path)  # another run, the same file
    assert again.tried("s1") == Counter({"kill:a": 2, "kill:b + kill:c": 1})
    covered = again.covered("s1")
    assert (covered.classes, covered.combinations, covered.runs, covered.failures) == (
        frozenset({"kill:a/instant", "kill:b/instant", "kill:c/instant"}), 2, 4, 1)
    assert again.failures("s1", before=time.time()) == [("kill:b + kill:c", '{"duplicate": 3}', "r/3")]
    assert again.failures("s1", before=0.0) == []  # none before the epoch
    assert again.tried("s2") == Counter()


def test_a_subject_on_several_brokers_is_another_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """What explore tried on one broker it has not tried on three: their coverage is kept apart."""
    monkeypatch.delenv("HARNESS_BROKERS", raising=False)
    one = subject_of(MatrixRun("transactional"))
    monkeypatch.setenv("HARNESS_BROKERS", "3")
    assert subject_of(MatrixRun("transactional")) == one + ", on 3 brokers"


def test_a_subject_into_a_table_is_another_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """What explore tried into a topic it has not tried into a table (other commit points, other readers)."""
    monkeypatch.delenv("HARNESS_BROKERS", raising=False)
    topic = subject_of(MatrixRun("delta_streaming", output="kafka"))
    assert subject_of(MatrixRun("delta_streaming", output="delta")) == topic + ", into delta"


def test_a_subject_on_another_store_or_release_is_another_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """What explore tried on the volume, or on one release, it has not tried on S3 or on another release."""
    monkeypatch.delenv("HARNESS_BROKERS", raising=False)
    kafka, spark = versions.KAFKA_VERSIONS[0], versions.SPARK_VERSIONS[0]
    line = versions.Stack(kafka, spark).line
    default = subject_of(MatrixRun("iceberg_streaming", output="iceberg"), versions.Stack(kafka, spark))
    assert subject_of(MatrixRun("iceberg_streaming", output="iceberg", store="s3"),
                      versions.Stack(kafka, spark)) == default.replace(", into iceberg", ", into iceberg on s3")
    older = versions.ICEBERG_VERSIONS[line][1]
    assert subject_of(MatrixRun("iceberg_streaming", output="iceberg"), versions.Stack(kafka, spark, older)) == \
        default + f", on Iceberg {older}"
    newest = versions.ICEBERG_VERSIONS[line][0]
    assert subject_of(MatrixRun("iceberg_streaming", output="iceberg"), versions.Stack(kafka, spark, newest)) == default
    other = versions.SPARK_VERSIONS[1]
    assert subject_of(MatrixRun("iceberg_streaming", output="iceberg"), versions.Stack(kafka, other)) == \
        default + f", on Spark {other}"


def test_workers_sharing_a_store_never_claim_the_same_combination(tmp_path: Path) -> None:
    first, second = CoverageStore(tmp_path), CoverageStore(tmp_path)  # two processes' views of one file
    plan = ["a", "b", "c"]
    assert first.claim("s1", plan, "w0") == "a"
    assert second.claim("s1", plan, "w1") == "b"
    assert first.claim("s1", plan, "w0") == "c"
    assert second.claim("s1", plan, "w1") is None  # every one is running
    first.add("s1", "a", ("k/instant",), "pass", {}, 30.0, "r/a")  # finished: its claim is freed
    assert second.claim("s1", plan, "w1") == "a"
    assert first.claim("s2", plan, "w0") == "a"  # another subject's claims are its own
