"""The sink contract: `sink(frame, context) -> DataStreamWriter`, and the context a sink is given.

Importable on the executors (they unpickle the context inside a sink's partition writers), so it
depends on nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SinkContext:
    """What a sink is told. Fields are only ever appended, with defaults, so sinks written against an
    older context keep working."""

    bootstrap: str  # Kafka through the gate (the chaos route): every write to Kafka goes here
    topic: str  # the output topic (output kafka; made for every scenario)
    sink_id: str  # the sink's stable id: the same across the query's restarts, unique per scenario
    checkpoint: str  # the query's checkpoint folder, on the volume the driver and executors share
    marker_topic: str  # a topic (as many partitions as the output) for sinks that record what they committed
    output: str = "kafka"  # where the harness reads the output: kafka (the topic) or delta (the table)
    table_path: str = ""  # output delta: the Delta table's path on the shared volume (write it there)
