"""KNOWN BAD: `bad_iceberg_merge_adds_twice` on a merge-on-read table, for the iceberg output and the
running_totals pipeline: a state table (one row per user, `TABLE = "state"`) in format version 2 with
`write.merge.mode` merge-on-read, so each MERGE deletes the rows it replaces by position, compacted every
other batch as the reference is (`rewrite_data_files`).

Bug: as `bad_iceberg_merge_adds_twice`, the MERGE adds each batch's sums and its record of what it saw is a
second commit: a batch replayed between them is added twice. Must produce: `wrong_value` and
`batch_committed_twice` (kill-driver-table.committed: `kill:driver@table.committed:2`), never `unexpected`
(a reader that ignored the position deletes would find every key's old totals too).
"""

from harness.catalog.sinks.bad_iceberg_merge_adds_twice import AddSums
from harness.catalog.sinks.iceberg_merge_on_read_upsert import PROPERTIES, compact

OUTPUT = "iceberg"  # the output it writes (harness.output): run and certify it with --output iceberg
TABLE = "state"  # one row per key: judged on each key's row against its final value (harness.checker.state_table)


class MergeOnReadAddSums(AddSums):
    properties = PROPERTIES

    def __call__(self, frame, batch_id: int) -> None:  # type: ignore[no-untyped-def]
        super().__call__(frame, batch_id)
        if batch_id % 2 == 1:
            compact(frame.sparkSession, self.table)


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.foreachBatch(MergeOnReadAddSums(context))
