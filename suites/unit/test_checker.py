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
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord

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


def test_stuck_partitions_are_anomalies_and_name_their_open_transactions() -> None:
    expected = model(3)
    result = read(list(expected), stuck={0: (3, 5)})
    result.open_transactions = [{"transactional_id": "t-0", "producer_id": 7, "partitions": [0]},
                                {"transactional_id": "t-1", "producer_id": 8, "partitions": [1]}]
    verdict = check(checkers(), expected, result, identity, incomplete={"reason": "deadline"})
    assert set(verdict.anomalies) == {"stuck", "incomplete"}
    stuck = verdict.anomalies["stuck"].examples[0]
    assert stuck["last_stable_offset"] == 3
    assert [t["transactional_id"] for t in stuck["open_transactions"]] == ["t-0"]
    assert verdict.outcome == "fail"  # stuck is evidence, even in an incomplete run


def test_a_crashing_check_is_unknown_never_a_pass() -> None:
    class Crashing(ExactlyOnceChecker):
        def anomalies(self, ledger):  # type: ignore[no-untyped-def]
            raise RuntimeError("a bug in a checker")

    verdict = check([Crashing()], model(1), read(["id-0"]), identity)
    assert verdict.outcome == "unknown"
    assert "a bug in a checker" in (verdict.error or "")


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


UNREADABLE = [
    b"not json", b"", b'{"id":"id-1","key":"key-1","se', b"[1, 2]", b'{"ID":"id-1"}', b'{"id":7}', b"\xff\xfe\x00",
    b'{"id":"' + b"x" * 300_000, None,  # a huge truncated record, a tombstone
]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 200), data=st.data())
def test_unreadable_records_are_named_and_every_other_record_is_still_checked(n: int, data) -> None:
    expected = model(n)
    ids = list(expected)
    duplicated = data.draw(st.lists(st.sampled_from(ids), max_size=10))
    bad = data.draw(st.lists(st.sampled_from(UNREADABLE), min_size=1, max_size=10))
    values: list[bytes | None] = [json.dumps({"id": i}).encode() for i in ids + duplicated]
    for value in bad:
        values.insert(data.draw(st.integers(0, len(values))), value)
    records = [OutputRecord(0, offset, None, value, 0) for offset, value in enumerate(values)]  # type: ignore[arg-type]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(records)), max_size=4)))

    streamed = OutputCheck(checkers(), expected, identity)
    for start, end in zip([0, *cuts], [*cuts, len(records)], strict=True):
        streamed.feed(records[start:end])
    verdict = streamed.verdict(ReadResult(records, {0: len(records)}, {0: len(records)}))

    found = {name: a.count for name, a in verdict.anomalies.items()}
    assert found == {"unreadable": len(bad), **({"duplicate": len(duplicated)} if duplicated else {})}
    assert verdict.outcome == "fail" and verdict.guarantee == NONE and verdict.error is None
    example = verdict.anomalies["unreadable"].examples[0]
    assert {"partition", "offset", "value", "reason"} <= example.keys()
    assert all(e["value"] is None or len(e["value"]) <= 70 for e in verdict.anomalies["unreadable"].examples)


def test_an_unreadable_record_shows_its_first_bytes_escaped() -> None:
    result = ReadResult([OutputRecord(2, 41, None, b'\x00{"id": \xff', 0)], {2: 42}, {2: 42})
    verdict = check(checkers(), {}, result, identity)
    example = verdict.anomalies["unreadable"].examples[0]
    assert example["partition"] == 2 and example["offset"] == 41
    assert example["value"] == '\\x00{"id": \\xff' and "DecodeError" in example["reason"]


def spread(ids: list[str], data, partitions: int = 4) -> list[OutputRecord]:
    """Records written in `ids` order to partitions chosen at random (as a producer with no key does),
    read back with the partitions interleaved at random (as a consumer fetches them)."""
    rng = data.draw(st.randoms(use_true_random=False))
    lanes: list[list[str]] = [[] for _ in range(partitions)]
    for i in ids:
        lanes[rng.randrange(partitions)].append(i)
    records, at = [], [0] * partitions
    while any(at[p] < len(lanes[p]) for p in range(partitions)):
        p = rng.choice([p for p in range(partitions) if at[p] < len(lanes[p])])
        records.append(OutputRecord(p, at[p], None, json.dumps({"id": lanes[p][at[p]]}).encode(), 0))
        at[p] += 1
    return records


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 150), data=st.data())
def test_a_valid_output_spread_over_partitions_in_any_way_passes(n: int, data) -> None:
    expected = model(n, keys=3)
    records = spread(list(expected), data)
    verdict = check(checkers(), expected, ReadResult(records, {}, {}), identity)
    assert verdict.outcome == "pass", verdict.summary()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(2, 150), data=st.data())
def test_a_duplicate_in_another_partition_is_a_duplicate_and_not_a_reordering(n: int, data) -> None:
    expected = model(n, keys=2)
    ids = list(expected)
    again = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=5))
    written = list(ids)
    for i in again:  # a replayed write lands later than its original, wherever its partition puts it
        written.insert(data.draw(st.integers(written.index(i) + 1, len(written))), i)
    verdict = check(checkers(), expected, ReadResult(spread(written, data), {}, {}), identity)
    assert {name: a.count for name, a in verdict.anomalies.items()} == {"duplicate": len(again)}


def test_a_reordering_within_one_partition_is_caught() -> None:
    expected = {"a-1": Expected("k", 1), "a-2": Expected("k", 2), "a-3": Expected("k", 3), "b-1": Expected("j", 1)}
    written = [(0, "a-1"), (1, "b-1"), (0, "a-3"), (0, "a-2")]  # seq 3 before seq 2 of key k, one partition
    records = [OutputRecord(p, n, b"k", json.dumps({"id": i}).encode()) for n, (p, i) in enumerate(written)]
    verdict = check(checkers(), expected, ReadResult(records, {}, {}), identity)
    assert {name: a.count for name, a in verdict.anomalies.items()} == {"reordered": 1}
    example = verdict.anomalies["reordered"].examples[0]
    assert {"id": "a-2", "seq": 2, "after_seq": 3, "partition": 0}.items() <= example.items()
    assert verdict.guarantee == EXACTLY_ONCE and verdict.outcome == "fail"


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 200), drop=st.integers(0, 5), data=st.data())
def test_a_table_s_rows_in_any_order_are_never_reordered(n: int, drop: int, data) -> None:
    """A table keeps no row order (an upsert shuffles a batch by key, a writer sorts its rows): its files'
    rows in any order pass, and a loss is still named."""
    expected = model(n)
    ids = data.draw(st.permutations(sorted(expected)))
    kept = ids[drop:] if drop < n else ids
    verdict = check(checkers(), expected, ReadResult(spread(kept, data), {}, {}), identity, ordered=False)
    lost = n - len(kept)
    assert {name: a.count for name, a in verdict.anomalies.items()} == ({"lost": lost} if lost else {})


def test_an_incomplete_run_loses_only_what_it_consumed_and_is_unknown_without_evidence() -> None:
    expected = model(10)
    consumed = list(expected)[:6]  # the checkpoint says the pipeline consumed the input of these
    read_back = consumed[:6] + list(expected)[6:7]  # and a result of the batch in flight
    progress = {"reason": "no progress for 180 s", "consumed": 6, "total": 10}
    verdict = check(checkers(), expected, read(read_back), identity, incomplete=progress, required=consumed)
    assert set(verdict.anomalies) == {"incomplete"}
    assert verdict.outcome == "unknown" and verdict.guarantee == "unknown"
    assert verdict.anomalies["incomplete"].examples[0]["results_not_reached"] == 3
    assert "no progress for 180 s" in (verdict.error or "")

    lossy = check(checkers(), expected, read(read_back[1:] + ["id-2"]), identity, incomplete=progress,
                  required=consumed)
    assert {name: a.count for name, a in lossy.anomalies.items()} == {"lost": 1, "duplicate": 1, "incomplete": 1}
    assert lossy.outcome == "fail" and lossy.guarantee == NONE


def test_values_and_partitions_read_alike_from_messages_and_records_made_by_hand() -> None:
    """A read's Messages take the fast way, anything else the general one, with the same result."""
    from confluent_kafka import Message

    from harness.checker.ledger import partitions_of, values_of

    messages = [Message(topic="t", partition=p, offset=p, value=b"v%d" % p) for p in range(3)]
    by_hand = [OutputRecord(p, p, None, b"v%d" % p) for p in range(3)]
    for records in (messages, by_hand, messages[:1] + by_hand[1:], []):
        assert values_of(records) == [b"v0", b"v1", b"v2"][:len(records)]
        assert partitions_of(records) == [0, 1, 2][:len(records)]
