"""Load generator for benchmarks/gate.py; runs inside a container on the cluster's network.

    python gate_client.py BOOTSTRAP TOPIC MEGABYTES RATE_MB_S [REQUESTS]

Produces MEGABYTES of 1 KiB records at up to RATE_MB_S, then consumes them all; then REQUESTS (200)
produce requests one at a time, each awaited; prints one JSON line with the achieved produce and consume
throughput in MB/s and the requests' median round trip in ms.
"""

import json
import statistics
import sys
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

RECORD = 1024


def main() -> None:
    bootstrap, topic, megabytes, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    count = int(megabytes * 1_000_000 / RECORD)
    value = b"x" * RECORD
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "enable.idempotence": True, "queue.buffering.max.kbytes": 262144})
    started = time.perf_counter()
    for n in range(count):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
        if n % 1000 == 0:
            producer.poll(0)
            ahead = n * RECORD / (rate * 1_000_000) - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
    producer.flush(120)
    produce_s = time.perf_counter() - started

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                         "fetch.max.bytes": 64 * 1024 * 1024})
    metadata = consumer.list_topics(topic, timeout=30)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in metadata.topics[topic].partitions])
    started = time.perf_counter()
    seen = 0
    while seen < count:
        seen += sum(1 for m in consumer.consume(10_000, timeout=1.0) if m.error() is None)
    consume_s = time.perf_counter() - started
    consumer.close()
    size = count * RECORD / 1_000_000
    requests = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    print(json.dumps({"produce_mb_s": size / produce_s, "consume_mb_s": size / consume_s,
                      "request_ms": round_trip_ms(bootstrap, topic, requests)}))


def round_trip_ms(bootstrap: str, topic: str, requests: int) -> float:
    """The median time of one produce request awaited alone (a record, its acknowledgement), in ms."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    producer.produce(topic, b"warm")
    producer.flush(30)  # the connection and the topic's metadata, outside the timing
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        producer.produce(topic, b"x")
        producer.flush(30)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


if __name__ == "__main__":
    main()
