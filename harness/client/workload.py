"""The seeded input workload: records with unique ids, skewed keys and per-key sequence numbers, produced
over the direct listener with an idempotent producer; every send is recorded as acked, failed or unknown."""

from __future__ import annotations

import random
import time
from bisect import bisect
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import NamedTuple

from confluent_kafka import KafkaError, Message, Producer

from harness.client.client_log import logged
from harness.errors import InfrastructureError
from harness.history import History

CLOSING_KEY = "closing"
SEQUENCE_HEADER = "eo-seq"  # a record's place in the produce order (decimal), across all partitions


class Event(NamedTuple):
    """One event of the harness's own workload (a payment), the value of an input record; `id` is its
    identity end to end."""

    id: str
    key: str
    seq: int
    ts: int
    amount: float
    payload: str = ""

    def to_json(self) -> bytes:
        """Compact JSON, fields in declaration order, no payload when empty: what json.dumps writes, in a
        tenth of its time (it was most of the workload's cost, paid once producing and once for the
        model). Ids, keys and payloads are made here of letters, digits and dashes, which JSON writes
        as they are; a float is written as its repr, as json does."""
        payload = f',"payload":"{self.payload}"' if self.payload else ""
        return (f'{{"id":"{self.id}","key":"{self.key}","seq":{self.seq},"ts":{self.ts},'
                f'"amount":{self.amount!r}{payload}}}').encode()


class InputRecord(NamedTuple):
    """One input record as produced to Kafka: `id` names it in the send log; `timestamp` in ms, or
    None for the time of the send."""

    id: str
    key: bytes | None
    value: bytes
    timestamp: int | None = None

    @classmethod
    def read(cls, message: Message) -> InputRecord:
        """An input record as read back from its topic (a model's input in `check` and incomplete runs)."""
        return cls("", message.key(), message.value(), message.timestamp()[1])


@dataclass(frozen=True)
class Workload:
    """What to produce. Same seed and settings, same records."""

    records: int
    seed: int = 1
    keys: int = 100
    key_skew: float = 1.2  # Zipf-like exponent: low-numbered keys are hot
    disorder_ms: int = 0  # event time may run back by up to this much
    payload_bytes: int = 0
    start_ts: int = 1_700_000_000_000
    step_ms: int = 10  # event time between consecutive records
    closing_ms: int = 0  # when set, one closing record this far past the last one (moves a watermark on)
    duplicate_share: float = 0.0  # this share of records is sent again soon after (an at-least-once upstream)

    def generate(self) -> Iterator[Event]:
        """The records in production order; a closing record, when asked for, comes last with a key
        of its own (`CLOSING_KEY`), so that a model can tell it apart."""
        rng = random.Random(self.seed)
        # cumulative once; a key is drawn as random.choices(cum_weights=...) draws it, without its per-call setup
        cumulative = list(accumulate(1.0 / (k + 1) ** self.key_skew for k in range(self.keys)))
        total, last_key = cumulative[-1], self.keys - 1
        key_names = [f"k{k:04d}" for k in range(self.keys)]
        seqs = [0] * self.keys
        payload = "x" * self.payload_bytes
        again = random.Random(self.seed + 1)  # its own stream: the records are the same with or without repeats
        recent: deque[Event] = deque(maxlen=50)
        for n in range(self.records):
            k = bisect(cumulative, rng.random() * total, 0, last_key)
            seqs[k] += 1
            ts = self.start_ts + n * self.step_ms - (rng.randint(0, self.disorder_ms) if self.disorder_ms else 0)
            amount = round(rng.uniform(1, 500), 2)
            record = Event(f"{self.seed}-{n:09d}", key_names[k], seqs[k], ts, amount, payload)
            yield record
            recent.append(record)
            if self.duplicate_share and again.random() < self.duplicate_share:
                yield again.choice(recent)
        if self.closing_ms:
            last = self.start_ts + (self.records - 1) * self.step_ms
            yield Event(f"{self.seed}-closing", CLOSING_KEY, 1, last + self.closing_ms, 0.0, payload)

    def inputs(self) -> Iterator[InputRecord]:
        """The records as they are produced: JSON values keyed by their key."""
        for record in self.generate():
            yield InputRecord(record.id, record.key.encode(), record.to_json())


PENDING, ACKED, FAILED = 0, 1, 2  # a send's fate in the send log


@dataclass
class SendLog:
    """The fate of every send, by its place in the produce order: a record is only expected downstream
    if its send was acknowledged. One byte a send, not a set of ids, so a million sends stay small;
    `PENDING` until the broker answers, and after a flush that got no answer: unknown.
    Why a send failed is in the history."""

    fates: bytearray = field(default_factory=bytearray)
    acked_ms: dict[str, int] = field(default_factory=dict)  # when each id's send was acked (live input: latency)

    def sent(self) -> int:
        """A new send, pending; its place in the produce order."""
        self.fates.append(PENDING)
        return len(self.fates) - 1

    def was_acked(self, send: int) -> bool:
        return self.fates[send] == ACKED

    @property
    def acked(self) -> int:
        return self.fates.count(ACKED)

    @property
    def failed(self) -> int:
        return self.fates.count(FAILED)

    @property
    def unknown(self) -> int:
        return self.fates.count(PENDING)

    def check(self, scenario: str) -> None:
        """Every send acknowledged, else the input is incomplete and no verdict could be trusted."""
        failed, unknown = self.failed, self.unknown
        if failed or unknown:
            raise InfrastructureError(f"{scenario}: {failed} sends failed, {unknown} unknown; input incomplete")


class WorkloadProducer:
    """Produces a workload by key, idempotently with acks=all, optionally at a fixed rate."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            logged({
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "compression.type": "lz4",
            })
        )

    def produce(self, topic: str, inputs: Iterable[InputRecord], rate: float = 0.0,
                history: History | None = None, hold: Callable[[], None] | None = None) -> SendLog:
        """Send every record; `rate` records/s (0: as fast as possible). Returns the send log. `hold`, if
        given, is called once the first record is acknowledged, and the pace starts again after it: live
        input waits there for the stream's first batch, so however slowly the query starts, the rest of
        the input arrives while it runs.

        Each record carries its place in the produce order (`SEQUENCE_HEADER`): create timestamps tie
        for records sent within one millisecond, and across partitions nothing else tells their order."""
        log = SendLog()
        pending: dict[int, str] = {}  # sends without an answer yet -> their record's id
        started = time.monotonic()

        def delivered(n: int, error: KafkaError | None, message: Message) -> None:
            record_id = pending.pop(n)
            if error is None:
                log.fates[n] = ACKED
                if rate:
                    log.acked_ms[record_id] = int(time.time() * 1000)
            else:
                log.fates[n] = FAILED
            if history is not None:
                history.record(
                    "send", id=record_id, status="acked" if error is None else "failed",
                    partition=message.partition(), offset=message.offset(), error=str(error) if error else None,
                )

        for record in inputs:
            n = log.sent()
            pending[n] = record.id
            stamp = {} if record.timestamp is None else {"timestamp": record.timestamp}
            while True:
                try:
                    self.producer.produce(
                        topic, record.value, record.key, on_delivery=partial(delivered, n),
                        headers=[(SEQUENCE_HEADER, str(n).encode())], **stamp
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)
            self.producer.poll(0)
            if hold is not None and n == 0:
                self.producer.flush(60)
                hold()
                started = time.monotonic() - (1 / rate if rate else 0.0)  # the pace counts from here
            if rate:
                ahead = (n + 1) / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        self.producer.flush(60)
        if history is not None:
            for record_id in pending.values():
                history.record("send", id=record_id, status="unknown")
        return log
