"""KNOWN BAD: the reference sink, whose marker lookup counts only the markers written since the driver's
previous start, to bound the scan a restarted driver's tasks make.

Each driver start is a generation (counted in a file beside the checkpoint); a marker carries the
generation that wrote it, and a task skips its write only for a marker of the current or the previous
generation. Bug: one restart is handled (the batch re-run by the new driver finds its markers), but a
second restart before that batch is done (the driver lost again while it recovers) runs the batch in
a generation two past the one that committed part of it, whose markers it no longer counts: those
partitions are written twice. No single fault shows it. Must produce: `duplicate`, e.g.
kill:driver@txn.commit then kill:driver@txn.first_write.
"""

import json
import os

from harness.catalog.sinks import transactional


def next_generation(checkpoint: str) -> int:
    """This driver start's number, 0 for the first: one line a start, in a file beside the checkpoint."""
    with open(f"{checkpoint}-sink-generations", "a+") as starts:
        starts.seek(0)
        generation = len(starts.readlines())
        starts.write("start\n")
        starts.flush()
        os.fsync(starts.fileno())
    return generation


class RecentMarkers(transactional.PartitionWriter):
    def __init__(self, context, batch_id: int, sizes: dict[int, int], generation: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context, batch_id, sizes)
        self.generation = generation

    def _produce_marker(self, producer, marker_partition: int, partition: int) -> None:  # type: ignore[no-untyped-def]
        marker = json.dumps({"sink": self.context.sink_id, "batch": self.batch_id, "partition": partition,
                             "generation": self.generation})
        self._produce(producer, self.context.marker_topic, marker, f"{self.batch_id}-{partition}", marker_partition)

    def _marks(self, marker: dict, partition: int) -> bool:
        return super()._marks(marker, partition) and marker["generation"] >= self.generation - 1


class Writers:
    """Makes the batch's partition writers of this driver start (picklable: a module-level class)."""

    def __init__(self, generation: int) -> None:
        self.generation = generation

    def __call__(self, context, batch_id: int, sizes: dict[int, int]) -> RecentMarkers:  # type: ignore[no-untyped-def]
        return RecentMarkers(context, batch_id, sizes, self.generation)


def sink(frame, context):  # type: ignore[no-untyped-def]
    writers = Writers(next_generation(context.checkpoint))
    return frame.writeStream.foreachBatch(transactional.TransactionalBatchWriter(context, writers))
