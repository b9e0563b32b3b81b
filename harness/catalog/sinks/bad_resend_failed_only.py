"""KNOWN BAD: the reference sink, except that when a transaction must be aborted because some of its
writes failed, only those writes are sent again.

Bug: the writer gives its messages 10 s to be delivered (`message.timeout.ms`), keeps the ones whose
delivery failed, and when the commit then says the transaction requires an abort, aborts it and writes
just those again in a new transaction. An abort discards every write of the transaction, the delivered
ones too: they are lost. A write fails only when a partition's leader cannot take it for 10 s; on one
broker nothing in the quick matrix does that. On three, a leader whose followers are cut from it
shrinks its ISR below min.insync.replicas=2, and every write to it fails with NOT_ENOUGH_REPLICAS until
the cut heals. Must produce: `lost` (isr-shrink-txn.first_write, `--brokers 3`).
"""

from __future__ import annotations

from harness.catalog.sinks.transactional import PartitionWriter, TransactionalBatchWriter

DELIVERY_TIMEOUT_MS = 10_000


class ResendFailedWriter(PartitionWriter):
    def producer_config(self, partition: int) -> dict:
        return {**super().producer_config(partition), "message.timeout.ms": DELIVERY_TIMEOUT_MS}

    def write(self, producer, rows, marker_partition: int, partition: int) -> None:  # type: ignore[no-untyped-def]
        self.failed: list[tuple] = []
        super().write(producer, rows, marker_partition, partition)
        producer.flush(60)  # every delivery report in: the failed writes are known

    def produce_options(self, topic: str, value, key, partition: int | None) -> dict:  # type: ignore[no-untyped-def]
        def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
            if error is not None:
                self.failed.append((topic, value, key, partition))

        return {"on_delivery": delivered}

    def commit(self, producer) -> None:  # type: ignore[no-untyped-def]
        from confluent_kafka import KafkaException

        try:
            super().commit(producer)
        except KafkaException as exception:
            if not exception.args[0].txn_requires_abort():
                raise
            producer.abort_transaction(60)
            failed, self.failed = self.failed, []
            print(f"transaction aborted: writing the {len(failed)} failed writes again", flush=True)
            self._retry(producer.begin_transaction)
            for topic, value, key, partition in failed:  # the bug: the delivered writes were aborted too
                self._produce(producer, topic, value, key, partition)
            producer.flush(60)
            super().commit(producer)


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(TransactionalBatchWriter(context, ResendFailedWriter))
