"""The checkers name exactly the anomalies inserted into a correct output, and nothing else."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import (
    AT_LEAST_ONCE,
    AT_MOST_ONCE,
    EXACTLY_ONCE,
    NONE,
    ExactlyOnceChecker,
    Expected,
    PerKeyOrderChecker,
    check,
)
from harness.checker.compose import Checker, OutputCheck
from harness.reader import OutputRecord, ReadResult

pytestmark = pytest.mark.unit
def checkers() -> list[Checker]:
    """Fresh checkers per output: a checker keeps state across the batches of one read."""
    return [ExactlyOnceChecker(), PerKeyOrderChecker()]


def identity(value: bytes) -> str:
    return json.loads(value)["id"]


def model(n: int, keys: int = 3) -> dict[str, Expected]:
    """n records over `keys` keys, each key's sequence 1, 2, 3, ..."""
    return {f"id-{k}": Expected(f"key-{k % keys}", k // keys + 1) for k in range(n)}


def read(ids: list[str], stuck: dict | None = None) -> ReadResult:
    records = [OutputRecord(0, n, None, json.dumps({"id": i}).encode(), 0) for n, i in enumerate(ids)]
    return ReadResult(records, {0: len(ids)}, {0: len(ids)}, stuck or {})


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 300),
    dup=st.integers(0, 20),
    drop=st.integers(0, 20),
    foreign=st.integers(0, 5),
    data=st.data(),
)
def test_reports_exactly_the_inserted_anomalies(n: int, dup: int, drop: int, foreign: int, data) -> None:
    expected = model(n)
    ordered = list(expected)
    dropped = set(data.draw(st.lists(st.sampled_from(ordered), max_size=drop, unique=True)))
    kept = [i for i in ordered if i not in dropped]
    # duplicates go at the end, after every first occurrence, so they never disturb per-key order
    duplicated = data.draw(st.lists(st.sampled_from(kept), max_size=dup)) if kept else []
    extra = [f"foreign-{k}" for k in range(foreign)]
    extra_at = data.draw(st.integers(0, len(kept)))
    ids = kept[:extra_at] + extra + kept[extra_at:] + duplicated

    verdict = check(checkers(), expected, read(ids), identity)

    found = {name: a.count for name, a in verdict.anomalies.items()}
    wanted = {
        name: count
        for name, count in (("duplicate", len(duplicated)), ("lost", len(dropped)), ("unexpected", len(extra)))
        if count
    }
    assert found == wanted
    assert verdict.outcome == ("fail" if wanted else "pass")
    if not wanted:
        assert verdict.guarantee == EXACTLY_ONCE
    elif extra or (duplicated and dropped):
        assert verdict.guarantee == NONE
    elif duplicated:
        assert verdict.guarantee == AT_LEAST_ONCE
    else:
        assert verdict.guarantee == AT_MOST_ONCE


@settings(max_examples=100, deadline=None)
@given(n=st.integers(4, 200), data=st.data())
def test_a_swap_within_a_key_is_reordered_and_nothing_else(n: int, data) -> None:
    expected = model(n, keys=2)
    ids = list(expected)
    first = data.draw(st.integers(0, n - 3))
    second = first + 2  # same key (keys alternate), later in that key's sequence
    ids[first], ids[second] = ids[second], ids[first]

    verdict = check(checkers(), expected, read(ids), identity)

    assert set(verdict.anomalies) == {"reordered"}
    assert verdict.anomalies["reordered"].count == 1
    assert verdict.guarantee == EXACTLY_ONCE and verdict.outcome == "fail"


def test_examples_name_partition_and_offset_and_are_capped() -> None:
    expected = model(50)
    verdict = check(checkers(), expected, read(list(expected) * 2), identity)
    duplicate = verdict.anomalies["duplicate"]
    assert duplicate.count == 50
    assert len(duplicate.examples) == 20
    assert {"id", "count", "partition", "offset"} <= duplicate.examples[0].keys()


def test_stuck_partitions_and_incomplete_runs_are_anomalies() -> None:
    expected = model(3)
    verdict = check(checkers(), expected, read(list(expected), stuck={0: (3, 5)}), identity, incomplete="deadline")
    assert set(verdict.anomalies) == {"stuck", "incomplete"}
    assert verdict.anomalies["stuck"].examples[0]["last_stable_offset"] == 3
    assert verdict.outcome == "fail"


def test_a_crashing_check_is_unknown_never_a_pass() -> None:
    result = ReadResult([OutputRecord(0, 0, None, b"not json", 0)], {0: 1}, {0: 1})
    verdict = check(checkers(), model(1), result, identity)
    assert verdict.outcome == "unknown"
    assert verdict.error


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 120), data=st.data())
def test_batches_as_read_give_the_verdict_of_one_batch(n: int, data) -> None:
    expected = model(n, keys=3)
    pool = [*expected, "foreign-1"]
    ids = data.draw(st.lists(st.sampled_from(pool), max_size=2 * n))  # duplicates, losses, swaps, foreigners
    whole = read(ids)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ids)), max_size=6)))

    streamed = OutputCheck(checkers(), expected, identity)
    for start, end in zip([0, *cuts], [*cuts, len(ids)], strict=True):
        streamed.feed(whole.records[start:end])

    once = check(checkers(), expected, whole, identity)
    assert streamed.verdict(whole).to_dict() == once.to_dict()


def test_a_replay_in_the_middle_is_a_duplicate_not_a_reordering() -> None:
    expected = model(9, keys=1)
    ids = list(expected)
    replayed = ids[:5] + ids[1:3] + ids[5:]  # a batch re-run: records 1 and 2 again, after record 4
    verdict = check(checkers(), expected, read(replayed), identity)
    assert set(verdict.anomalies) == {"duplicate"}
    assert verdict.anomalies["duplicate"].count == 2
