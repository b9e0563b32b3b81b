"""Fresh, uniquely named topics for each scenario, created over the direct listener."""

from __future__ import annotations

import uuid

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from harness.errors import InfrastructureError


def unique_name(scenario: str, role: str) -> str:
    return f"{scenario}-{uuid.uuid4().hex[:8]}-{role}"


def create_topics(admin: AdminClient, names: list[str], partitions: int) -> None:
    """Create topics with the cluster's replication factor and min.insync.replicas (the brokers' defaults:
    1 on one broker, 3 and 2 on three); raise InfrastructureError naming the one that failed.

    Kept forever: a workload may carry old record timestamps (a replay of history), which time-based
    retention would delete in the middle of a scenario."""
    futures = admin.create_topics([NewTopic(name, partitions, replication_factor=-1, config={"retention.ms": "-1"})
                                   for name in names], operation_timeout=30)
    for name, future in futures.items():
        try:
            future.result(timeout=60)
        except KafkaException as error:
            raise InfrastructureError(f"cannot create topic {name}: {error}") from None


def end_offsets(admin_bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """High watermarks of `topic` (what the pipeline must consume)."""
    from confluent_kafka import Consumer, TopicPartition

    from harness.client.client_log import logged

    group = f"harness-offsets-{uuid.uuid4().hex}"
    consumer = Consumer(logged({"bootstrap.servers": admin_bootstrap, "group.id": group}))
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)
        }
    finally:
        consumer.close()
