"""The workload is deterministic per seed, with unique ids, skewed keys and per-key sequences."""

import json
from collections import Counter

import pytest

from harness.scenario import batch_size
from harness.workload import Workload

pytestmark = pytest.mark.unit


def test_same_seed_same_records_other_seed_other_records() -> None:
    assert list(Workload(500, seed=7).generate()) == list(Workload(500, seed=7).generate())
    assert list(Workload(500, seed=7).generate()) != list(Workload(500, seed=8).generate())


def test_ids_unique_keys_skewed_sequences_per_key() -> None:
    records = list(Workload(5_000, keys=50).generate())
    assert len({r.id for r in records}) == 5_000
    counts = Counter(r.key for r in records)
    assert counts.most_common(1)[0][1] > 5 * counts.most_common()[-1][1]
    for key in counts:
        assert [r.seq for r in records if r.key == key] == list(range(1, counts[key] + 1))


def test_disorder_and_payload() -> None:
    records = list(Workload(1_000, disorder_ms=500, payload_bytes=64).generate())
    assert any(b.ts < a.ts for a, b in zip(records, records[1:], strict=False))
    assert json.loads(records[0].to_json())["payload"] == "x" * 64


def test_repeats_are_sent_soon_after_and_leave_the_other_records_as_they_were() -> None:
    plain = list(Workload(2_000, seed=3).generate())
    repeated = list(Workload(2_000, seed=3, duplicate_share=0.05).generate())
    firsts = list(dict.fromkeys(repeated))
    assert firsts == plain and 50 < len(repeated) - len(plain) < 150
    original = {r.id: n for n, r in enumerate(plain)}
    sent = 0  # originals sent so far
    for record in repeated:
        if original[record.id] == sent:
            sent += 1
        else:  # a repeat, within the 50 originals after its own
            assert sent - original[record.id] <= 50


def test_a_backlog_is_read_in_about_five_batches_of_at_least_a_thousand() -> None:
    assert batch_size(20_000) == 4_000 and batch_size(1_000_000) == 200_000
    assert batch_size(100) == 1_000
    assert -(-20_001 // batch_size(20_001)) == 5
