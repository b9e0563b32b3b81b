"""The sink contract: `sink(frame, context) -> DataStreamWriter`, and the context a sink is given.

Importable on the executors (they unpickle the context inside a sink's partition writers), so it
depends on nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SinkContext:
    """What a sink is told: the chaos route to Kafka, its output topic, its id, its checkpoint folder,
    and a marker topic (as many partitions as the output) for sinks that record what they committed."""

    bootstrap: str
    topic: str
    sink_id: str
    checkpoint: str
    marker_topic: str
