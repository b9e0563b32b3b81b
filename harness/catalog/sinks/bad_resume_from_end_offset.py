"""KNOWN BAD: a plain (non-transactional) sink that resumes a retried task where its last attempt
stopped, by the output partition's end offset.

Each task writes its rows, in order, to the output partition of its own number with an idempotent
producer. Before writing, it looks up its marker (sink, batch, task) in the marker topic: the first
attempt records the partition's end offset there; a later attempt skips as many rows as were written
since. Kills, restarts and re-run batches are handled (what an attempt wrote is a prefix of the rows).

Bug: two attempts of one task running at once (a slow executor and its speculative copy, or a zombie
whose task Spark ran again) both count what is written so far and both write the rest. Must produce:
`duplicate` (speculation-produce; pause-executor-produce).
"""

from __future__ import annotations

import json
import uuid


class ResumingWriter:
    def __init__(self, context, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        self.context, self.batch_id = context, batch_id

    def __call__(self, rows) -> None:  # type: ignore[no-untyped-def]
        from confluent_kafka import Producer
        from pyspark import TaskContext

        task = TaskContext.get().partitionId()
        producer = Producer({"bootstrap.servers": self.context.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5})
        end = self._end_offset(task)
        key = f"{self.context.sink_id}/{self.batch_id}/{task}"
        start = self._marker(task, key)
        if start is None:  # the first attempt: remember where this batch's rows begin
            producer.produce(self.context.marker_topic, json.dumps(end).encode(), key.encode(), partition=task)
            if producer.flush(60):
                raise RuntimeError("the marker was not written")
            start = end
        skip = end - start
        for n, row in enumerate(rows):
            if n < skip:
                continue
            while True:
                try:
                    producer.produce(self.context.topic, row["value"].encode(), row["key"].encode(), partition=task)
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(60):
            raise RuntimeError("records left unsent")

    def _consumer(self):  # type: ignore[no-untyped-def]
        from confluent_kafka import Consumer

        return Consumer({"bootstrap.servers": self.context.bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False, "enable.partition.eof": True})

    def _end_offset(self, task: int) -> int:
        from confluent_kafka import TopicPartition

        consumer = self._consumer()
        try:
            return consumer.get_watermark_offsets(TopicPartition(self.context.topic, task), timeout=30)[1]
        finally:
            consumer.close()

    def _marker(self, task: int, key: str) -> int | None:
        """Where an earlier attempt of this task began, if one did."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

        consumer = self._consumer()
        try:
            if consumer.get_watermark_offsets(TopicPartition(self.context.marker_topic, task), timeout=30)[1] == 0:
                return None
            consumer.assign([TopicPartition(self.context.marker_topic, task, OFFSET_BEGINNING)])
            while True:
                for message in consumer.consume(100, timeout=1):
                    error = message.error()
                    if error is None:
                        if message.key().decode() == key:
                            return int(json.loads(message.value()))
                    elif error.code() == KafkaError._PARTITION_EOF:
                        return None
                    else:
                        raise KafkaException(error)
        finally:
            consumer.close()


class BatchWriter:
    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.context = context

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        frame.select("key", "value").foreachPartition(ResumingWriter(self.context, batch_id))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(BatchWriter(context))
