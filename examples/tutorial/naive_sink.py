"""Tutorial, step 1: a sink as it is often first written. Each micro-batch goes to the output topic in one
Kafka transaction, from the driver.

It looks exactly-once, and is not: a transaction makes a batch's records visible together or not at all,
but nothing here stops a batch that Spark runs again from being written again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from confluent_kafka import Producer

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import DataStreamWriter

    from harness.driver.sink import SinkContext


class NaiveBatchWriter:
    """The foreachBatch function: Spark calls it on the driver with each micro-batch and its id."""

    def __init__(self, context: SinkContext) -> None:
        self.context = context
        self.producer: Producer | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if self.producer is None:
            self.producer = Producer({
                "bootstrap.servers": self.context.bootstrap,  # the harness's route, through its fault injectors
                "transactional.id": f"{self.context.sink_id}-driver",  # the same after a restart
                "transaction.timeout.ms": 60_000,
            })
            self.producer.init_transactions(60)  # fences the producer of a driver that died
        rows = batch.select("key", "value").collect()
        self.producer.begin_transaction()
        for row in rows:
            produce(self.producer, self.context.topic, row["value"], row["key"])
        self.producer.commit_transaction(60)  # every record of the batch, or none
        # The bug: when the driver dies after this commit and before Spark records the batch as done, the
        # restarted query runs the same batch again, and this writes it a second time.


def sink(frame: DataFrame, context: SinkContext) -> DataStreamWriter:
    return frame.writeStream.foreachBatch(NaiveBatchWriter(context))


def produce(producer: Producer, topic: str, value: object, key: object) -> None:
    """One record into the open transaction; waits while the producer's queue is full."""
    while True:
        try:
            producer.produce(topic, as_bytes(value), as_bytes(key))
            return
        except BufferError:
            producer.poll(0.1)


def as_bytes(column: object) -> object:
    """A string or binary column as the producer takes it (Spark gives binary columns as bytearray)."""
    return column.encode() if isinstance(column, str) else bytes(column) if isinstance(column, bytearray) else column
