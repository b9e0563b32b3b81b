"""The fraud-windows model is exact on its workload, and the windows checker names exactly the
duplicates, divergent repeats, wrong counts, losses and foreign results put into a correct output."""

import json
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.catalog.pipelines import fraud_windows
from harness.checker import check
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord, in_produce_order
from harness.client.workload import CLOSING_KEY, SEQUENCE_HEADER, InputRecord, Workload
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
PIPELINE = load_pipeline("fraud_windows")


def inputs(records: int = 20_000, seed: int = 1) -> list[dict]:
    return [json.loads(r.to_json()) for r in PIPELINE.workload(Workload(records, seed=seed)).generate()]


EXPECTED = PIPELINE.model(inputs())


def render(identity: str, count: int | None = None) -> bytes:
    user, start = identity.rsplit("@", 1)
    count = EXPECTED[identity].value["count"] if count is None else count
    return json.dumps({"user": user, "window_start": int(start), "count": count,
                       "alert": count > fraud_windows.THRESHOLD}, separators=(",", ":")).encode()


def output(values: list[bytes]) -> ReadResult:
    return ReadResult([OutputRecord(n % 4, n, None, v) for n, v in enumerate(values)], {}, {})


def test_the_workload_spans_tens_of_windows_with_hot_users_and_counts_near_the_threshold() -> None:
    windows_per_user = Counter(want.key for want in EXPECTED.values())
    counts = Counter(want.value["count"] for want in EXPECTED.values())
    assert windows_per_user.most_common(1)[0][1] >= 60, "the hottest user has a window every minute"
    assert sum(want.value["alert"] for want in EXPECTED.values()) >= 100
    assert counts[fraud_windows.THRESHOLD] and counts[fraud_windows.THRESHOLD + 1], "counts at the threshold"
    assert CLOSING_KEY not in windows_per_user, "the closing record's window never closes"
    assert sum(want.value["count"] for want in EXPECTED.values()) > 19_000  # nearly every input is in a window


def test_an_input_that_could_be_late_is_refused_by_the_model() -> None:
    records = inputs(100)
    records.insert(50, {**records[0], "id": "late", "ts": records[49]["ts"] - fraud_windows.DELAY_MS})
    with pytest.raises(ValueError, match="could be dropped as late"):
        fraud_windows.model(records)


def test_records_of_one_millisecond_on_other_partitions_are_read_back_in_produce_order() -> None:
    """A fast producer stamps thousands of records with one create time; the closing record (event time
    far ahead) must not be ordered before the records sent just before it, or the model calls them late."""
    produced = list(PIPELINE.inputs(Workload(2_000)))
    partitions: list[list[OutputRecord]] = [[], [], [], []]
    for n, record in enumerate(produced):
        p = 3 if record.key == CLOSING_KEY.encode() else n % 3  # the reader meets partition 3 first
        partitions[p].append(OutputRecord(p, len(partitions[p]), record.key, record.value, timestamp=1_000,
                                          headers=[(SEQUENCE_HEADER, str(n).encode())]))
    as_read = [r for partition in reversed(partitions) for r in partition]  # the reader's interleaving
    ordered = in_produce_order(as_read)
    assert [r.value() for r in ordered] == [r.value for r in produced]
    assert PIPELINE.expected(InputRecord.read(r) for r in ordered) == PIPELINE.expected(iter(produced))


def test_a_topic_without_produce_order_is_ordered_by_time_then_partition_and_offset() -> None:
    records = [OutputRecord(1, 0, None, b"c", 5), OutputRecord(0, 1, None, b"b", 5), OutputRecord(0, 0, None, b"a", 4)]
    assert [r.value() for r in in_produce_order(records)] == [b"a", b"b", b"c"]


def test_identity_refuses_what_is_not_a_window_result() -> None:
    for bad in (b"", b"{", b'{"user":"k","window_start":1,"count":"3","alert":false}', b'{"user":"k"}', b"[]"):
        with pytest.raises(ValueError):
            fraud_windows.identity(bad)


RENDERED = {i: render(i) for i in EXPECTED}


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32), sizes=st.lists(st.integers(0, 5), min_size=4, max_size=4))
def test_anomalies_put_into_a_correct_output_are_named_exactly(seed: int, sizes: list[int]) -> None:
    rng = random.Random(seed)
    picked = rng.sample(list(EXPECTED), sum(sizes))
    dropped, duplicated, diverged, wrong = (set(picked[sum(sizes[:n]):sum(sizes[:n + 1])]) for n in range(4))
    values = [render(i, EXPECTED[i].value["count"] + 1) if i in wrong else v
              for i, v in RENDERED.items() if i not in dropped]
    values += [RENDERED[i] for i in duplicated] + [render(i, EXPECTED[i].value["count"] - 1) for i in diverged]
    values += [render("k9999@0", 3), b"not json"]
    rng.shuffle(values)
    cuts = sorted(rng.randint(0, len(values)) for _ in range(rng.randint(0, 4)))

    streamed = PIPELINE.output_check(EXPECTED)  # batches read whole, or value by value when one is bad
    for start, end in zip([0, *cuts], [*cuts, len(values)], strict=True):
        streamed.feed(output(values).records[start:end])
    verdict = streamed.verdict(output(values))

    wanted = {"lost": len(dropped), "wrong_value": len(wrong), "duplicate": len(duplicated),
              "divergent": len(diverged), "unexpected": 1, "unreadable": 1}
    assert {name: a.count for name, a in verdict.anomalies.items()} == {k: v for k, v in wanted.items() if v}
    assert verdict.outcome == "fail" and verdict.guarantee == "none"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_a_correct_output_in_any_order_passes(seed: int) -> None:
    values = list(RENDERED.values())
    random.Random(seed).shuffle(values)
    assert check(PIPELINE.checkers(), EXPECTED, output(values), PIPELINE.identity).outcome == "pass"
    streamed = PIPELINE.output_check(EXPECTED)
    streamed.feed(output(values).records)
    assert streamed.verdict(output(values)).outcome == "pass"


def test_the_dedup_model_expects_each_id_once() -> None:
    dedup = load_pipeline("dedup")
    records = [json.loads(r.to_json()) for r in dedup.workload(Workload(5_000, seed=2)).generate()]
    assert len(records) > 5_100
    assert list(dedup.model(records)) == [r.id for r in Workload(5_000, seed=2).generate()]
