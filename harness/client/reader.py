"""Reads a topic to its end with read_committed, and knows it has read everything.

The end is the last stable offset (LSO) of every partition: a read_committed consumer's watermark
query returns it. A partition whose LSO stays below its high watermark past the deadline has an open
transaction: it is reported `stuck`, not silently cut short, and the broker names the transaction.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from harness.client.client_log import logged
from harness.client.records import Record, Records
from harness.client.transactions import open_transactions
from harness.errors import BadInput, InfrastructureError


@dataclass
class ReadResult:
    """Everything committed in a topic, and evidence about what was not."""

    records: Records  # a list given here is made Records
    stable: dict[int, int]  # partition -> last stable offset
    high: dict[int, int]  # partition -> high watermark
    stuck: dict[int, tuple[int, int]] = field(default_factory=dict)  # partition -> (LSO, HWM)
    uncommitted_visible: int | None = None  # records seen under read_uncommitted
    open_transactions: list[dict] = field(default_factory=list)  # named by the broker's admin API, when stuck
    # a table's data files whose rows are not the count its commit recorded (harness.checker.table_files)
    rewritten: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.records = Records.of(self.records)

    @property
    def aborted(self) -> int | None:
        """Records visible only under read_uncommitted: evidence of aborted transactions."""
        if self.uncommitted_visible is None:
            return None
        return self.uncommitted_visible - len(self.records)


@contextmanager
def collector_paused():
    """Pause the cyclic garbage collector while millions of long-lived records pile up.

    Each full collection walks every live object; while a read keeps a million messages alive,
    those walks cost more than the read itself. Records hold no reference cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _ignore(batch: list[Record]) -> None:
    """No one looks at the batches as they come."""


@contextmanager
def feeding(on_batch: Callable[[list[Record]], None]) -> Iterator[Callable[[list[Record]], None]]:
    """Hand batches to `on_batch` on a thread of its own, and wait for it on the way out.

    confluent-kafka lets go of the GIL while `consume` waits for the broker; a callback on another
    thread works in those waits, where one called between two `consume` calls adds its whole time
    to the read. An error in the callback is raised here, after the read.
    """
    batches: queue.SimpleQueue[list[Record] | None] = queue.SimpleQueue()
    errors: list[BaseException] = []

    def work() -> None:
        while (batch := batches.get()) is not None:
            if not errors:
                try:
                    on_batch(batch)
                except BaseException as error:  # noqa: BLE001 - raised again in the reading thread
                    errors.append(error)

    thread = threading.Thread(target=work, name="reader-batches", daemon=True)
    thread.start()
    try:
        yield batches.put
    finally:
        batches.put(None)
        thread.join()
    if errors:
        raise errors[0]


BROKER_BACK_SECONDS = 60.0
TAIL_WAIT_S = 0.05  # a consume's wait for the last records of a read
BROKER_COMING_BACK = {  # what a watermark query meets while a broker restarts
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN,
}


class CommittedReader:
    """Drains a topic from the beginning with read_committed over the harness's direct listener."""

    def __init__(self, bootstrap: str, batch: int = 10_000) -> None:
        self.bootstrap = bootstrap
        self.batch = batch

    def _consumer(self, isolation: str) -> Consumer:
        return Consumer(
            logged({
                "bootstrap.servers": self.bootstrap,
                "group.id": f"harness-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
                "enable.partition.eof": False,
                # large fetches keep the checker fed; a small queue of what is fetched ahead (held in C while
                # Python works through it) keeps the read's memory down without slowing it
                "fetch.max.bytes": 64 * 1024 * 1024,
                "max.partition.fetch.bytes": 16 * 1024 * 1024,
                "queued.max.messages.kbytes": 16 * 1024,
                "log_level": 2,  # connection errors surface as one InfrastructureError, not a stream of logs
            })
        )

    def partitions(self, consumer: Consumer, topic: str) -> list[int]:
        try:
            metadata = consumer.list_topics(topic, timeout=10)
        except KafkaException as error:  # a wrong address says so at once; a restarted broker answers this
            raise InfrastructureError(f"cannot reach Kafka at {self.bootstrap}: {error}") from None
        described = metadata.topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise BadInput(f"topic '{topic}' does not exist on {self.bootstrap}")
        return sorted(described.partitions)

    def _watermarks(self, consumer: Consumer, topic: str, partitions: list[int]) -> dict[int, int]:
        return {p: self._end_offset(consumer, TopicPartition(topic, p)) for p in partitions}

    def _end_offset(self, consumer: Consumer, partition: TopicPartition) -> int:
        """A partition's end offset. While a restarted broker takes its partitions back (no leader for a
        few seconds) it is asked again, up to `BROKER_BACK_SECONDS`, rather than failing the read: a
        fault may restart the broker just before the read."""
        deadline = time.monotonic() + BROKER_BACK_SECONDS
        while True:
            try:
                return consumer.get_watermark_offsets(partition, timeout=10)[1]
            except KafkaException as error:
                if error.args[0].code() not in BROKER_COMING_BACK or time.monotonic() > deadline:
                    raise InfrastructureError(f"reading {partition.topic} at {self.bootstrap}: {error}") from None
            time.sleep(0.5)

    def read(
        self,
        topic: str,
        stable_timeout: float = 30.0,
        count_uncommitted: bool = False,
        on_batch: Callable[[list[Record]], None] | None = None,
    ) -> ReadResult:
        """Read every committed record; wait up to `stable_timeout` s for open transactions to close.

        `on_batch` sees each committed batch as it arrives, in order, on a thread of its own (`feeding`):
        a checker then works while the consumer waits for the broker.
        """
        committed = self._consumer("read_committed")
        uncommitted = self._consumer("read_uncommitted")
        open_consumers = [committed, uncommitted]
        try:
            partitions = self.partitions(committed, topic)
            high = self._watermarks(uncommitted, topic, partitions)
            deadline = time.monotonic() + stable_timeout
            stable = self._watermarks(committed, topic, partitions)
            while any(stable[p] < high[p] for p in partitions) and time.monotonic() < deadline:
                time.sleep(0.5)
                stable = self._watermarks(committed, topic, partitions)
            stuck = {p: (stable[p], high[p]) for p in partitions if stable[p] < high[p]}
            records = Records()
            with collector_paused():
                if on_batch is None:
                    self._drain(committed, topic, stable, _ignore, records)
                else:
                    with feeding(on_batch) as feed:
                        self._drain(committed, topic, stable, feed, records)
                committed.close()  # its fetch buffers go before the second read, which holds every record
                open_consumers.remove(committed)
                visible = self._drain(uncommitted, topic, high, _ignore) if count_uncommitted else None
            named = open_transactions(self.bootstrap, topic) if stuck else []
            return ReadResult(records, stable, high, stuck, visible, named)
        finally:
            for consumer in open_consumers:
                consumer.close()

    def _drain(
        self,
        consumer: Consumer,
        topic: str,
        ends: dict[int, int],
        on_batch: Callable[[list[Record]], None],
        records: Records | None = None,
    ) -> int:
        """Consume until every partition's position reaches its end offset; the number of records read.
        They are kept in `records` when given; the uncommitted read only counts, and would otherwise
        hold a second copy of the output (a million records: 450 MB) next to the first."""
        todo = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        read = 0
        idle_deadline = time.monotonic() + 60
        positions = [TopicPartition(topic, p, 0) for p in todo]
        while todo:
            # a full batch or half a second, but the tail (the last batch's worth) in short waits: a consume
            # asked for more records than are left waits out its whole timeout
            left = sum(ends[tp.partition] - max(tp.offset, 0) for tp in positions if tp.partition in todo)
            messages = consumer.consume(self.batch, timeout=0.5 if left > self.batch else TAIL_WAIT_S)
            failed = next(filter(None, map(Message.error, messages)), None)  # in C: no Python loop per record
            if failed is not None:
                raise InfrastructureError(f"reading {topic}: {failed}")
            read += len(messages)
            if messages:
                if records is not None:
                    records.extend(messages)
                on_batch(messages)
                idle_deadline = time.monotonic() + 60
            positions = consumer.position([TopicPartition(topic, p) for p in todo])
            todo -= {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
            if time.monotonic() > idle_deadline:
                raise InfrastructureError(f"reading {topic}: no progress for 60 s; partitions left {sorted(todo)}")
        return read
