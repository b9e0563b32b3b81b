"""KNOWN BAD: the reference sink, writing its (batch, partition) markers for even batches only, to halve
the marker traffic ("a re-run is rare, and most re-runs are of an even batch anyway").

Bug: an odd batch commits its records without a marker, so a task of an odd batch run again after its
commit landed (a retried task, a restarted driver) finds no marker and writes its records a second
time. Every fault at a first occurrence (batch 0) or at batch 2 sees only even batches; it takes a fault
at another occurrence, in an odd batch, to catch it. Must produce: `duplicate`, e.g.
kill:sender@txn.commit#6 (a commit of batch 1, four tasks a batch).
"""

from harness.catalog.sinks import transactional


class EvenBatchMarkers(transactional.PartitionWriter):
    def write(self, producer, rows, marker_partition: int, partition: int) -> None:  # type: ignore[no-untyped-def]
        self._produce_rows(producer, rows, partition)
        if self.batch_id % 2 == 0:
            self._produce_marker(producer, marker_partition, partition)


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(transactional.TransactionalBatchWriter(context, EvenBatchMarkers))
