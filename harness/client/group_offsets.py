"""The offsets a consumer group committed, through kafka-python's admin client.

confluent-kafka's `list_consumer_group_offsets` runs librdkafka's OffsetFetch, which now and then segfaults its
`rdk:main` thread when the group is new to the broker (confluentinc/confluent-kafka-javascript#374, on
librdkafka's own code; confluentinc/confluent-kafka-python#1982). It took the harness's whole process down in
2 of 4 Flink certifications here (confluent-kafka 2.16.1), each as the baseline began. kafka-python speaks the
same request in Python: a failure is an exception, returned as "nothing committed yet".
"""

from __future__ import annotations

import logging

from harness.quiet import dependency_noise_hidden

REQUEST_TIMEOUT_MS = 10_000


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """partition -> the offset `group` committed on `topic` (empty when it committed none, or the broker cannot
    say now)."""
    with dependency_noise_hidden():
        from kafka.admin import KafkaAdminClient

    logging.getLogger("kafka").setLevel(logging.CRITICAL)  # a broker that cannot answer now is "none yet"
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="harness-group-offsets",
                                 request_timeout_ms=REQUEST_TIMEOUT_MS)
    except Exception:  # noqa: BLE001 - no answer now: nothing seen committed yet
        return {}
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
    except Exception:  # noqa: BLE001 - as above
        return {}
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic and meta.offset >= 0}
