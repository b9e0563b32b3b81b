"""The workload is deterministic per seed, with unique ids, skewed keys and per-key sequences."""

import json
import math
import random
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message

from harness.client import workload as workload_module
from harness.client.workload import Workload, WorkloadProducer
from harness.errors import InfrastructureError
from harness.history import History, read_history
from harness.run.scenario import batch_size

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


def spark_batches(sizes: list[int], limit: int) -> int:
    """Batches Spark's Kafka source plans for a backlog of these partition sizes under maxOffsetsPerTrigger:
    the limit shared out in proportion to what each partition has left, each share rounded down (up when
    below one), as KafkaMicroBatchStream.rateLimit does."""
    left, batches = list(sizes), 0
    while sum(left):
        total = sum(left)
        shares = [min(n, math.ceil(limit * n / total) if limit * n / total < 1 else math.floor(limit * n / total))
                  for n in left]
        left = [n - share for n, share in zip(left, shares, strict=True)]
        batches += 1
    return batches


def test_a_backlog_is_read_in_five_batches_or_one_a_thousand_records_with_no_tail() -> None:
    assert batch_size(20_000, 4) == 4_004 and batch_size(1_000_000, 4) == 200_004
    assert batch_size(100, 4) == 104 and batch_size(4_000, 2) == 1_002 and batch_size(2_500, 4) == 838
    rng = random.Random(7)
    for _ in range(300):
        partitions, records = rng.randint(1, 16), rng.choice([1_000, 1_250, 4_000, 10_000, 20_001, 1_000_000])
        cuts = sorted(rng.randint(0, records) for _ in range(partitions - 1))
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, records], strict=True)]
        # rounding each share down used to leave a few records over for a batch of their own
        assert spark_batches(sizes, batch_size(records, partitions)) == min(5, max(1, -(-records // 1_000))), sizes


def test_values_are_what_json_dumps_writes() -> None:
    workload = Workload(3_000, payload_bytes=16, disorder_ms=50, closing_ms=1_000, duplicate_share=0.05)
    for record in workload.generate():
        fields = record._asdict()
        if not record.payload:
            del fields["payload"]
        assert record.to_json() == json.dumps(fields, separators=(",", ":")).encode()
    assert not next(Workload(1).generate()).payload and b"payload" not in next(Workload(1).inputs()).value


class _Broker:
    """A producer's stand-in: answers each send on the next poll, the second with an error, the fifth never."""

    def __init__(self, config: dict) -> None:
        self.answers: list[Callable[[], None]] = []
        self.sends = 0

    def produce(self, topic: str, value: bytes, key: bytes, on_delivery: Callable, headers: list, **stamp: int) -> None:
        self.sends += 1
        if self.sends != 5:
            error = KafkaError(KafkaError._MSG_TIMED_OUT) if self.sends == 2 else None
            self.answers.append(partial(on_delivery, error, Message(topic=topic, partition=0, offset=self.sends - 1)))

    def poll(self, timeout: float) -> None:
        answers, self.answers = self.answers, []
        for answer in answers:
            answer()

    def flush(self, timeout: float) -> None:
        self.poll(timeout)


def test_every_send_is_tracked_by_its_place_in_the_produce_order(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(workload_module, "Producer", _Broker)
    history = History(tmp_path / "history.jsonl")
    log = WorkloadProducer("nowhere:9092").produce("in", Workload(5).inputs(), history=history)
    history.close()
    assert [log.was_acked(n) for n in range(5)] == [True, False, True, True, False]
    assert (log.acked, log.failed, log.unknown) == (3, 1, 1)
    sends = read_history(tmp_path / "history.jsonl", types={"send"})
    assert [(e["id"], e["status"]) for e in sends] == [
        ("1-000000000", "acked"), ("1-000000001", "failed"), ("1-000000002", "acked"), ("1-000000003", "acked"),
        ("1-000000004", "unknown")]
    with pytest.raises(InfrastructureError, match="1 sends failed, 1 unknown"):
        log.check("scenario")
    assert read_history(tmp_path / "history.jsonl", leave_out={"send"}) == []


def test_live_input_holds_after_its_first_record_acknowledged_then_keeps_its_pace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Live input waits for the stream's first batch after one record, so a slow query start cannot find
    the whole input already produced; after the hold the pace counts from there (no burst to catch up)."""
    monkeypatch.setattr(workload_module, "Producer", _Broker)
    seen: list[tuple[int, bool]] = []
    producer = WorkloadProducer("nowhere:9092")

    def hold() -> None:  # records the sends so far, and whether each was answered (flushed) before it
        seen.append((producer.producer.sends, not producer.producer.answers))
        time.sleep(0.3)

    started = time.monotonic()
    producer.produce("in", Workload(4).inputs(), rate=20, hold=hold)
    assert seen == [(1, True)]
    assert time.monotonic() - started >= 0.3 + 3 / 20 - 0.01
