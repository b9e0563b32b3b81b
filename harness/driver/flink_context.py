"""What a Flink job is told (harness.driver.flink_app): where its input and output are, and the names it must
use so that the harness can follow it. Standard library only: the job's module imports it in Flink's client."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FlinkJobContext:
    """`bootstrap_servers`: Kafka as the job reaches it (through the harness's gate); `group_id`: the consumer
    group its source commits its offsets under at each checkpoint (how the harness sees what it consumed);
    `transactional_id_prefix`: its sink's, stable across restarts, unique to the run."""

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    group_id: str
    transactional_id_prefix: str
    name: str
