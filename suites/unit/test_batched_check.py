"""The checkers judge a read the same however it comes: a table's rows as columns (`Records`, runs of one
partition, batches of any size) or record by record. The column path follows each partition's run in C
and walks record by record only where a sequence falls; both must name the same anomalies with the
same examples, on outputs with duplicates, losses, foreigners, reorderings, unreadable records and a
batch written twice."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import ExactlyOnceChecker, Expected, PerKeyOrderChecker
from harness.checker.compose import OutputCheck
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord, Records

pytestmark = pytest.mark.unit
KEYS = 3


def identity(value: bytes) -> str:
    return json.loads(value)["id"]


def model(n: int) -> dict[str, Expected]:
    return {f"id-{k}": Expected(f"key-{k % KEYS}", k // KEYS + 1) for k in range(n)}


def verdict_of(batches: list[list[OutputRecord]], expected: dict[str, Expected], as_columns: bool) -> dict:
    """Every anomaly with its count and examples, the read fed in these batches."""
    output_check = OutputCheck([ExactlyOnceChecker(), PerKeyOrderChecker()], expected, identity)
    records = Records()
    for batch in batches:
        fed = Records(batch) if as_columns else batch
        records.extend(fed)
        output_check.feed(fed)
    verdict = output_check.verdict(ReadResult(records, {}, {}))
    assert verdict.error is None
    return {name: (anomaly.count, anomaly.examples) for name, anomaly in verdict.anomalies.items()}


@st.composite
def outputs(draw: st.DrawFn) -> tuple[dict[str, Expected], list[OutputRecord]]:
    """A model and an output of it over a few partitions, each partition's records in model order, then
    spoilt: records dropped, swapped within a key, a foreigner and an unreadable record added, and one
    partition's run written again at the end (a batch committed twice)."""
    n = draw(st.integers(1, 120))
    expected = model(n)
    partitions = draw(st.integers(1, 4))
    by_partition: dict[int, list[str]] = {p: [] for p in range(partitions)}
    for identity_ in expected:
        if not draw(st.booleans()) or draw(st.integers(0, 9)):  # most are kept
            by_partition[draw(st.integers(0, partitions - 1))].append(identity_)
    for ids in by_partition.values():
        for _ in range(draw(st.integers(0, 2))):  # a swap, often within a key: reordered
            if len(ids) > 1:
                a, b = draw(st.integers(0, len(ids) - 1)), draw(st.integers(0, len(ids) - 1))
                ids[a], ids[b] = ids[b], ids[a]
    values = {p: [json.dumps({"id": i}).encode() for i in ids] for p, ids in by_partition.items()}
    if draw(st.booleans()):
        values[0].insert(draw(st.integers(0, len(values[0]))), b'{"id": "foreign"}')
    if draw(st.booleans()):
        values[partitions - 1].insert(draw(st.integers(0, len(values[partitions - 1]))), b"not json")
    again = draw(st.integers(0, partitions - 1))
    if draw(st.booleans()) and values[again]:  # a batch committed twice: its rows again, in a file of their own
        values[partitions] = list(values[again])
    # partitions read one after the other, as a table's files are
    records = [OutputRecord(p, offset, None, value) for p, run in values.items() for offset, value in enumerate(run)]
    return expected, records


@settings(max_examples=300, deadline=None)
@given(output=outputs(), data=st.data())
def test_columns_in_any_batches_name_what_record_by_record_names(output, data) -> None:  # type: ignore[no-untyped-def]
    expected, records = output
    cuts = sorted(data.draw(st.lists(st.integers(0, len(records)), max_size=6)))
    edges = [0, *cuts, len(records)]
    batches = [records[a:b] for a, b in zip(edges, edges[1:], strict=False) if b > a]

    by_record = verdict_of([[record] for record in records], expected, as_columns=False)

    assert verdict_of(batches, expected, as_columns=True) == by_record
    assert verdict_of(batches, expected, as_columns=False) == by_record


def test_a_fall_in_one_partition_s_run_leaves_the_runs_around_it_followed() -> None:
    """A batch of partitions' runs where the second falls: its violation is named at its place, and the runs
    after it are still followed (a later fall in another is found too)."""
    expected = model(12)
    ids = list(expected)  # key-0: id-0, id-3, id-6, id-9
    runs = [(0, ["id-0", "id-1", "id-2"]), (1, ["id-6", "id-3", "id-4"]), (2, ["id-9", "id-5", "id-7"]),
            (2, ["id-11", "id-8", "id-10"])]
    assert sorted(ids) == sorted(i for _, run in runs for i in run)
    offsets = dict.fromkeys(range(3), 0)
    records = []
    for partition, run in runs:
        for i in run:
            records.append(OutputRecord(partition, offsets[partition], None, json.dumps({"id": i}).encode()))
            offsets[partition] += 1

    found = verdict_of([records], expected, as_columns=True)

    count, examples = found.pop("reordered")
    assert not found and count == 2
    assert [(e["id"], e["partition"], e["offset"], e["after_seq"]) for e in examples] == [
        ("id-3", 1, 1, 3), ("id-8", 2, 4, 4)]
