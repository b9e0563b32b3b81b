"""KNOWN BAD: the plain sink that resumes a retried task where its last attempt stopped
(bad_resume_from_end_offset), writing each batch hash-partitioned by key and sorted, so that a task's
rows are the same in every attempt: its writing tasks read shuffle output from every worker.

Bug: as bad_resume_from_end_offset's, two attempts of one task running at once both count what is
written so far and both write the rest. Kills and restarts are handled. A paused worker does not show
it here: every task of the write stage waits for that worker's shuffle blocks, so no task is a
straggler and Spark runs no copy. Must produce: `duplicate` (speculation-produce, its first way: one
task's write held at the gate).
"""

from __future__ import annotations

from harness.catalog.sinks.bad_resume_from_end_offset import ResumingWriter


class ShuffledBatchWriter:
    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        self.context = context

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        rows = frame.select("key", "value").repartition(4, "key").sortWithinPartitions("key", "value")
        rows.foreachPartition(ResumingWriter(self.context, batch_id))


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(ShuffledBatchWriter(context))
