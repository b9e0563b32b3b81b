"""Tutorial, step 2: the naive sink made exactly-once, the way the harness's reference sinks do it
(harness/catalog/sinks/driver_transactional.py in this shape, one transaction per batch from the driver;
transactional.py the same per task, on the executors).

Each transaction also writes a marker (sink id, batch id) to the marker topic, so a batch's records and
its marker are committed together or not at all; and a batch whose marker is committed is not written
again. In this order:
1. `init_transactions()` with a `transactional.id` that stays the same across restarts fences every
   earlier producer with that id (a dead or paused driver can no longer commit), and finishes or aborts
   whatever transaction it left open.
2. Only then are the markers read, with read_committed: nothing of this sink's can change them now.
3. A batch with a marker is skipped: Spark is running it again, and its records are already visible.
   Any other batch is written with its marker in one transaction.
Any error fails the query, as most sinks do (fail-stop): restarted on its checkpoint, the query runs the
batch again and step 2 says whether it had committed.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter

    from harness.driver.sink import SinkContext

MARKER_PARTITION = 0  # every marker of this sink in one partition: read in order, up to its end


class ExactlyOnceBatchWriter:
    """The foreachBatch function: Spark calls it on the driver with each micro-batch and its id."""

    def __init__(self, context: SinkContext) -> None:
        self.context = context
        self.producer: Producer | None = None
        self.committed: set[int] = set()  # batch ids with a committed marker

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            self.write(batch, batch_id)
        except BaseException:
            self.producer = None  # whether its transaction committed is unknown: fence it and read the markers again
            raise

    def write(self, batch: DataFrame, batch_id: int) -> None:
        if self.producer is None:
            self.producer = Producer({
                "bootstrap.servers": self.context.bootstrap,  # the harness's route, through its fault injectors
                "transactional.id": f"{self.context.sink_id}-driver",  # the same after a restart
                "transaction.timeout.ms": 60_000,
            })
            self.producer.init_transactions(60)  # 1. fence, and settle what an earlier producer left open
            self.committed = self.committed_batches()  # 2. then read the markers
        if batch_id in self.committed:  # 3. a batch run again after its commit: already written
            return
        rows = batch.select("key", "value").collect()
        self.producer.begin_transaction()
        for row in rows:
            produce(self.producer, self.context.topic, row["value"], row["key"])
        marker = json.dumps({"sink": self.context.sink_id, "batch": batch_id})
        produce(self.producer, self.context.marker_topic, marker, str(batch_id), MARKER_PARTITION)
        self.producer.commit_transaction(60)  # the records and their marker, or neither
        self.committed.add(batch_id)

    def committed_batches(self) -> set[int]:
        """The batch ids of this sink's committed markers: the marker partition read to its end."""
        consumer = Consumer({"bootstrap.servers": self.context.bootstrap, "group.id": uuid.uuid4().hex,
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "enable.partition.eof": True})
        try:
            start = TopicPartition(self.context.marker_topic, MARKER_PARTITION, OFFSET_BEGINNING)
            if consumer.get_watermark_offsets(start, timeout=30)[1] == 0:
                return set()  # no marker yet
            consumer.assign([start])
            batches: set[int] = set()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                message = consumer.poll(1)
                if message is None:
                    continue
                error = message.error()
                if error is None:
                    marker = json.loads(message.value())
                    if marker["sink"] == self.context.sink_id:
                        batches.add(int(marker["batch"]))
                elif error.code() == KafkaError._PARTITION_EOF:  # the end of what is committed
                    return batches
                else:
                    raise KafkaException(error)
            raise TimeoutError(f"the marker topic {self.context.marker_topic} was not read to its end in 60 s")
        finally:
            consumer.close()


def sink(frame: DataFrame, context: SinkContext) -> DataStreamWriter:
    return frame.writeStream.foreachBatch(ExactlyOnceBatchWriter(context))


def produce(producer: Producer, topic: str, value: object, key: object, partition: int | None = None) -> None:
    """One record into the open transaction; waits while the producer's queue is full."""
    options = {} if partition is None else {"partition": partition}
    while True:
        try:
            producer.produce(topic, as_bytes(value), as_bytes(key), **options)
            return
        except BufferError:
            producer.poll(0.1)


def as_bytes(column: object) -> object:
    """A string or binary column as the producer takes it (Spark gives binary columns as bytearray)."""
    return column.encode() if isinstance(column, str) else bytes(column) if isinstance(column, bytearray) else column
