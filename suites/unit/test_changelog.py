"""The running-totals model holds every valid running value, and the changelog checker names exactly
the repeats, regressions, wrong totals and missing finals put into a valid changelog."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checker import EFFECTIVELY_ONCE, EXACTLY_ONCE
from harness.client.reader import ReadResult
from harness.client.records import OutputRecord
from harness.client.workload import Workload
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
PIPELINE = load_pipeline("running_totals")
INPUTS = [json.loads(r.to_json()) for r in Workload(3_000, seed=4, keys=20).generate()]
EXPECTED = PIPELINE.model(INPUTS)
USERS = sorted({want.key for want in EXPECTED.values()})
FINAL = {want.key: want.seq for want in EXPECTED.values() if want.required}


def update(user: str, count: int, total: int | None = None) -> bytes:
    total = EXPECTED[f"{user}@{count}"].value if total is None else total
    return json.dumps({"user": user, "count": count, "total_cents": total}).encode()


def changelog(rng: random.Random) -> dict[str, list[int]]:
    """Per user, the counts a run with random batch boundaries emits: an increasing subsequence
    that ends with the final count."""
    return {u: sorted(rng.sample(range(1, FINAL[u]), rng.randint(0, FINAL[u] - 1))) + [FINAL[u]] for u in USERS}


def verdict(per_partition: list[list[bytes]], cuts: int, rng: random.Random,  # type: ignore[no-untyped-def]
            ordered: bool = True):
    """Partitions read interleaved at random, fed in random batches (`ordered`: a topic's, else a table's)."""
    records = []
    at = [0] * len(per_partition)
    while any(at[p] < len(per_partition[p]) for p in range(len(per_partition))):
        p = rng.choice([p for p in range(len(per_partition)) if at[p] < len(per_partition[p])])
        records.append(OutputRecord(p, at[p], None, per_partition[p][at[p]]))
        at[p] += 1
    check = PIPELINE.output_check(EXPECTED, ordered=ordered)
    bounds = sorted(rng.randint(0, len(records)) for _ in range(cuts))
    for start, end in zip([0, *bounds], [*bounds, len(records)], strict=True):
        check.feed(records[start:end])
    return check.verdict(ReadResult(records, {}, {}))


def partitioned(updates: dict[str, list[bytes]]) -> list[list[bytes]]:
    """Each user's updates in order in the partition of its key, users' updates interleaved."""
    partitions: list[list[bytes]] = [[], [], []]
    for user, values in updates.items():
        partitions[USERS.index(user) % 3].extend(values)
    return partitions


def test_the_model_holds_every_running_total_and_requires_only_the_last() -> None:
    assert len(EXPECTED) == 3_000 and sum(want.required for want in EXPECTED.values()) == len(USERS)
    first = INPUTS[0]
    assert EXPECTED[f"{first['key']}@1"].value == round(first["amount"] * 100)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_any_valid_changelog_passes(seed: int) -> None:
    rng = random.Random(seed)
    updates = {u: [update(u, c) for c in counts] for u, counts in changelog(rng).items()}
    result = verdict(partitioned(updates), rng.randint(0, 5), rng)
    assert result.outcome == "pass" and result.guarantee == EXACTLY_ONCE, result.summary()


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32), data=st.data())
def test_repeats_regressions_wrong_totals_and_missing_finals_are_named(seed: int, data) -> None:
    rng = random.Random(seed)
    emitted = changelog(rng)
    users = rng.sample(USERS, 8)
    repeated, regressed, wrong, dropped = users[0:2], users[2:4], users[4:6], users[6:8]
    repeats = data.draw(st.booleans())
    updates: dict[str, list[bytes]] = {}
    for user, counts in emitted.items():
        values = [update(user, c) for c in counts]
        if user in repeated and repeats:  # a batch re-run at once: the same update again, right after
            values.insert(len(values) - 1, values[-2] if len(values) > 1 else values[-1])
        if user in regressed and len(values) > 1:  # a stale update landing after a newer one
            values.append(values[-2])
        if user in wrong:
            values[-1] = update(user, counts[-1], EXPECTED[f"{user}@{counts[-1]}"].value + 100)
        if user in dropped:
            values.pop()
        updates[user] = values
    result = verdict(partitioned(updates), rng.randint(0, 5), rng)

    regressions = sum(len(emitted[u]) > 1 for u in regressed)
    wanted = {"duplicate": 2 * repeats + regressions, "regression": regressions, "wrong_value": 2, "lost": 2}
    assert {name: a.count for name, a in result.anomalies.items()} == {k: v for k, v in wanted.items() if v}


def test_identical_repeats_alone_are_effectively_once() -> None:
    user = USERS[0]
    updates = {u: [update(u, FINAL[u])] for u in USERS}
    updates[user] = [update(user, FINAL[user])] * 2
    result = verdict(partitioned(updates), 0, random.Random(1))
    assert set(result.anomalies) == {"duplicate"} and result.guarantee == EFFECTIVELY_ONCE


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_a_table_s_updates_in_any_order_are_no_regression_and_still_judged(seed: int) -> None:
    """A table keeps no row order: its files' updates shuffled are no `regression`, but a wrong total and a
    missing final are still named."""
    rng = random.Random(seed)
    updates = {u: [update(u, c) for c in counts] for u, counts in changelog(rng).items()}
    wrong, dropped = rng.sample(USERS, 2)
    updates[wrong][-1] = update(wrong, FINAL[wrong], EXPECTED[f"{wrong}@{FINAL[wrong]}"].value + 100)
    updates[dropped].pop()
    partitions = partitioned(updates)
    for partition in partitions:
        rng.shuffle(partition)
    result = verdict(partitions, rng.randint(0, 5), rng, ordered=False)
    assert {name: a.count for name, a in result.anomalies.items()} == {"wrong_value": 1, "lost": 1}
