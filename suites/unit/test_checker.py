"""The checker names exactly the anomalies inserted into a correct output, and nothing else."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import AT_LEAST_ONCE, AT_MOST_ONCE, EXACTLY_ONCE, NONE, ExactlyOnceChecker
from harness.reader import OutputRecord

pytestmark = pytest.mark.unit


def output(ids: list[str]) -> list[OutputRecord]:
    return [OutputRecord(n % 4, n, None, json.dumps({"id": i}).encode()) for n, i in enumerate(ids)]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 300),
    dup=st.integers(0, 20),
    drop=st.integers(0, 20),
    foreign=st.integers(0, 5),
    data=st.data(),
)
def test_reports_exactly_the_inserted_anomalies(n: int, dup: int, drop: int, foreign: int, data) -> None:
    expected = [f"id-{k}" for k in range(n)]
    dropped = set(data.draw(st.lists(st.sampled_from(expected), max_size=drop, unique=True)))
    kept = [i for i in expected if i not in dropped]
    duplicated = data.draw(st.lists(st.sampled_from(kept), max_size=dup)) if kept else []
    extra = [f"foreign-{k}" for k in range(foreign)]
    ids = kept + duplicated + extra
    order = data.draw(st.permutations(ids))

    verdict = ExactlyOnceChecker().check(expected, output(list(order)))

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


def test_examples_name_partition_and_offset_and_are_capped() -> None:
    ids = [f"id-{k}" for k in range(50)]
    verdict = ExactlyOnceChecker().check(ids, output(ids + ids))
    duplicate = verdict.anomalies["duplicate"]
    assert duplicate.count == 50
    assert len(duplicate.examples) == 20
    assert {"id", "count", "partition", "offset"} <= duplicate.examples[0].keys()


def test_a_crashing_check_is_unknown_never_a_pass() -> None:
    garbage = [OutputRecord(0, 0, None, b"not json")]
    verdict = ExactlyOnceChecker().check(["a"], garbage)
    assert verdict.outcome == "unknown"
    assert verdict.error
