"""KNOWN BAD: a plain (non-transactional) sink that resumes a retried task where its last attempt
stopped, by the output partition's end offset.

Each task writes its rows, in order, to one output partition with an idempotent producer. Before
writing, it looks up its marker, named by the batch and the task's first row (a restarted driver may
number the same rows' task differently): the first attempt records its output partition and that
partition's end offset there; a later attempt writes to the same partition and skips as many rows as
were written since. Kills, restarts and re-run batches are handled (an attempt writes a prefix).

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
        import hashlib
        import itertools

        from confluent_kafka import Producer
        from pyspark import TaskContext

        first = next(rows, None)
        if first is None:
            return
        producer = Producer({"bootstrap.servers": self.context.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5})
        key = f"{self.context.sink_id}/{self.batch_id}/{hashlib.sha1(first['value'].encode()).hexdigest()}"
        found = self._marker(key)
        if found is None:  # the first attempt: remember where this task's rows begin
            partition = TaskContext.get().partitionId()
            start = self._end_offset(partition)
            producer.produce(self.context.marker_topic, json.dumps([partition, start]).encode(), key.encode(),
                             partition=0)
            if producer.flush(60):
                raise RuntimeError("the marker was not written")
            skip = 0
        else:  # a later attempt: what was written since the first began is a prefix of these rows
            partition, start = found
            skip = self._end_offset(partition) - start
        for n, row in enumerate(itertools.chain([first], rows)):
            if n < skip:
                continue
            while True:
                try:
                    producer.produce(self.context.topic, row["value"].encode(), row["key"].encode(),
                                     partition=partition)
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(60):
            raise RuntimeError("records left unsent")

    def _consumer(self):  # type: ignore[no-untyped-def]
        from confluent_kafka import Consumer

        return Consumer({"bootstrap.servers": self.context.bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False, "enable.partition.eof": True})

    def _end_offset(self, partition: int) -> int:
        from confluent_kafka import TopicPartition

        consumer = self._consumer()
        try:
            return consumer.get_watermark_offsets(TopicPartition(self.context.topic, partition), timeout=30)[1]
        finally:
            consumer.close()

    def _marker(self, key: str) -> tuple[int, int] | None:
        """(output partition, start offset) of an earlier attempt at these rows, if one began."""
        from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

        consumer = self._consumer()
        try:
            if consumer.get_watermark_offsets(TopicPartition(self.context.marker_topic, 0), timeout=30)[1] == 0:
                return None
            consumer.assign([TopicPartition(self.context.marker_topic, 0, OFFSET_BEGINNING)])
            while True:
                for message in consumer.consume(100, timeout=1):
                    error = message.error()
                    if error is None:
                        if message.key().decode() == key:
                            partition, start = json.loads(message.value())
                            return partition, start
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
