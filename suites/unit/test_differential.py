"""The differential oracle compares an output with a fault-free reference output: as a multiset of
records for append outputs, as the final table per key for update outputs; any interleaving of a
valid output passes, crafted duplicates, losses and wrong finals are named with exact counts."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import AT_LEAST_ONCE, AT_MOST_ONCE, EFFECTIVELY_ONCE, EXACTLY_ONCE, FAIL, PASS, UNKNOWN
from harness.checker.differential import APPEND, UPDATE, DifferentialCheck, disagreement
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord

pytestmark = pytest.mark.unit
EMPTY = ReadResult([], {}, {})


def records(contents: list[tuple[bytes | None, bytes | None]], partitions: int = 1) -> list[OutputRecord]:
    """Records with the given contents, spread over partitions by key (as Kafka's default partitioner)."""
    offsets = [0] * partitions
    out = []
    for key, value in contents:
        p = hash(key) % partitions
        out.append(OutputRecord(p, offsets[p], key, value))  # type: ignore[arg-type]
        offsets[p] += 1
    return out


def verdict(reference: list[OutputRecord], output: list[OutputRecord], mode: str = APPEND, incomplete=None):  # type: ignore[no-untyped-def]
    check = DifferentialCheck(reference, mode)
    check.feed(output)
    return check.verdict(EMPTY, incomplete)


APPENDED = [(f"u{n % 7}".encode(), f'{{"n":{n}}}'.encode()) for n in range(200)] + [(None, b"same"), (None, b"same")]


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 8))
def test_any_order_and_spread_of_the_reference_records_passes(rng: random.Random, partitions: int) -> None:
    shuffled = list(APPENDED)
    rng.shuffle(shuffled)
    result = verdict(records(APPENDED), records(shuffled, partitions))
    assert (result.outcome, result.guarantee) == (PASS, EXACTLY_ONCE), result.summary()


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False))
def test_repeats_and_drops_are_counted_exactly(rng: random.Random) -> None:
    repeated = rng.sample(APPENDED, rng.randint(1, 20))
    output = list(APPENDED) + repeated
    result = verdict(records(APPENDED), records(output))
    assert result.anomalies["duplicate"].count == len(repeated) and result.guarantee == AT_LEAST_ONCE

    dropped = rng.sample(range(len(APPENDED)), rng.randint(1, 20))
    output = [c for n, c in enumerate(APPENDED) if n not in dropped]
    result = verdict(records(APPENDED), records(output))
    assert result.anomalies["lost"].count == len(dropped) and result.guarantee == AT_MOST_ONCE


def test_a_record_the_reference_never_had_is_unexpected_and_a_third_copy_of_a_pair_a_duplicate() -> None:
    result = verdict(records(APPENDED), records(APPENDED + [(b"u1", b"corrupt"), (None, b"same")]))
    assert result.outcome == FAIL
    assert {n: a.count for n, a in result.anomalies.items()} == {"unexpected": 1, "duplicate": 1}
    assert result.anomalies["duplicate"].examples[0] == {"key": None, "value": "same", "count": 3, "reference": 2,
                                                         "partition": 0, "offset": 200}


def test_an_incomplete_run_loses_nothing_and_is_unknown_without_other_evidence() -> None:
    result = verdict(records(APPENDED), records(APPENDED[:50]), incomplete={"reason": "no progress"})
    assert (result.outcome, set(result.anomalies)) == (UNKNOWN, {"incomplete"})


def changelog(finals: dict[str, int], rng: random.Random) -> list[tuple[bytes, bytes]]:
    """Increasing updates per key ending with its final value, keys interleaved at random."""
    per_key = {k: sorted(rng.sample(range(1, final), rng.randint(0, min(final - 1, 5)))) + [final]
               for k, final in finals.items()}
    out = []
    while per_key:
        key = rng.choice(sorted(per_key))
        out.append((key.encode(), str(per_key[key].pop(0)).encode()))
        if not per_key[key]:
            del per_key[key]
    return out


FINALS = {f"user{n}": 10 + n for n in range(30)}


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 6))
def test_any_changelog_with_the_reference_finals_passes(rng: random.Random, partitions: int) -> None:
    reference = records(changelog(FINALS, random.Random(0)), 3)
    result = verdict(reference, records(changelog(FINALS, rng), partitions), UPDATE)
    assert (result.outcome, result.guarantee) == (PASS, EXACTLY_ONCE), result.summary()


def test_update_outputs_name_lost_and_wrong_finals_unexpected_keys_and_repeats() -> None:
    reference = records(changelog(FINALS, random.Random(0)), 3)
    output = changelog(FINALS, random.Random(1))
    output = [c for c in output if c[0] != b"user3"] + [(b"user4", b"999"), (b"ghost", b"1")]
    result = verdict(reference, records(output, 3), UPDATE)
    assert {n: a.count for n, a in result.anomalies.items()} == {"lost": 1, "wrong_value": 1, "unexpected": 1}
    assert result.anomalies["wrong_value"].examples[0]["value"] == "999"

    repeated = changelog(FINALS, random.Random(2))
    repeated.append(repeated[-1])
    result = verdict(reference, records(repeated, 3), UPDATE)
    assert (result.outcome, result.guarantee) == (FAIL, EFFECTIVELY_ONCE)
    assert result.anomalies["duplicate"].count == 1


def test_two_fault_free_runs_that_differ_are_named() -> None:
    first = records(APPENDED)
    second = records([(k, v + b" ") if n == 3 else (k, v) for n, (k, v) in enumerate(APPENDED)])
    assert disagreement(first, first[::-1], APPEND) == {}
    assert set(disagreement(first, second, APPEND)) == {"unexpected", "lost"}
