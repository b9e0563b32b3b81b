"""Batches reach the reader's callback in order, on another thread, and its errors are not lost; a drain
keeps its records only when asked; watermark queries wait out a restarted broker taking its partitions back."""

import operator
import threading

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from harness.client.reader import TAIL_WAIT_S, CommittedReader, feeding
from harness.errors import InfrastructureError

pytestmark = pytest.mark.unit


def test_every_batch_arrives_in_order_before_the_read_returns() -> None:
    seen: list[tuple[list[int], str]] = []
    with feeding(lambda batch: seen.append((batch, threading.current_thread().name))) as feed:
        for n in range(50):
            feed([n, n + 1])
    assert [batch for batch, _ in seen] == [[n, n + 1] for n in range(50)]
    assert {name for _, name in seen} == {"reader-batches"}


def test_an_error_in_the_callback_is_raised_after_the_read() -> None:
    calls: list[list[int]] = []

    def fails_once(batch: list[int]) -> None:
        calls.append(batch)
        raise ValueError("checker crashed")

    with pytest.raises(ValueError, match="checker crashed"):
        with feeding(fails_once) as feed:
            feed([1])
            feed([2])
    assert calls == [[1]]  # nothing more is handed to a callback that failed


def test_an_error_in_the_read_is_not_masked() -> None:
    with pytest.raises(KeyError):
        with feeding(lambda batch: None) as feed:
            feed([1])
            raise KeyError("broker gone")


class _Partition:
    """A consumer's stand-in over one partition of messages: `consume` hands out up to n at a time."""

    def __init__(self, messages: list[Message]) -> None:
        self.left = messages
        self.offset = 0
        self.timeouts: list[float] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        assert [tp.partition for tp in partitions] == [0]

    def consume(self, n: int, timeout: float) -> list[Message]:
        self.timeouts.append(timeout)
        batch, self.left = self.left[:n], self.left[n:]
        self.offset += len(batch)
        return batch

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.offset) for tp in partitions]


def test_a_drain_keeps_the_records_only_when_asked_and_counts_them_either_way() -> None:
    messages = [Message(topic="out", partition=0, offset=n, key=b"k%d" % (n % 2), value=b"%d" % n,
                        headers=[("eo-seq", b"%d" % n)] if n % 3 else None, timestamp=(1, 1_000 + n))
                for n in range(25)]
    reader = CommittedReader("nowhere:9092", batch=10)
    records: list = []
    batches: list[list] = []
    assert reader._drain(_Partition(messages), "out", {0: 25}, batches.append, records) == 25
    assert [len(b) for b in batches] == [10, 10, 5] and sum(batches, []) == records
    assert all(map(operator.is_, records, messages))  # the messages themselves, not copies
    assert reader._drain(_Partition(messages), "out", {0: 25}, lambda b: None) == 25


def test_a_drain_waits_briefly_for_its_last_records() -> None:
    """A consume asked for a full batch waits out its timeout when fewer are left: the tail, the last batch's
    worth, is asked for in short waits (a read's last half second, twice a row, was all waiting)."""
    messages = [Message(topic="out", partition=0, offset=n, value=b"%d" % n) for n in range(25)]
    partition = _Partition(messages)
    CommittedReader("nowhere:9092", batch=10)._drain(partition, "out", {0: 25}, lambda b: None)
    assert partition.timeouts == [0.5, 0.5, TAIL_WAIT_S]


class BrokerComingBack:
    """A consumer whose watermark query meets `errors` first, as just after a broker restart."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 0, 100 + partition.partition


def test_watermarks_wait_for_a_restarted_broker_to_lead_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A `restart-broker` row read just after the restart crashed the whole certification."""
    monkeypatch.setattr("harness.client.reader.time.sleep", lambda seconds: None)
    consumer = BrokerComingBack(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError._TRANSPORT)
    assert CommittedReader("kafka:9092")._watermarks(consumer, "out", [0, 1]) == {0: 100, 1: 101}  # type: ignore[arg-type]


def test_other_broker_errors_are_infrastructure_errors_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.client.reader.time.sleep", lambda seconds: pytest.fail("retried"))
    consumer = BrokerComingBack(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(InfrastructureError, match="reading out at kafka:9092"):
        CommittedReader("kafka:9092")._watermarks(consumer, "out", [0])  # type: ignore[arg-type]


def test_a_broker_that_never_comes_back_is_an_infrastructure_error(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(0, 10_000, 30))
    monkeypatch.setattr("harness.client.reader.time.monotonic", lambda: next(clock))
    monkeypatch.setattr("harness.client.reader.time.sleep", lambda seconds: None)
    consumer = BrokerComingBack(*[KafkaError.LEADER_NOT_AVAILABLE] * 100)
    with pytest.raises(InfrastructureError, match="Broker: Leader not available"):
        CommittedReader("kafka:9092")._watermarks(consumer, "out", [0])  # type: ignore[arg-type]
