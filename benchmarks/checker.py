"""Reader + checker throughput against a plain confluent-kafka consume loop, on the real broker.

    python benchmarks/checker.py [--records 1000000] [--repeats 3]

Writes N passthrough-style output records of about 100 bytes over 8 partitions, then times, in one
run and alternating, a plain consume loop over the topic and the harness's reader plus checker.
Prints medians, their ratio (goal >= 0.7) and the checker's peak memory (goal <= 1 GiB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from harness.checker import OutputCheck
from harness.cluster import images
from harness.cluster.topology import Cluster
from harness.interrupt import terminate_like_ctrl_c
from harness.pipeline import load_pipeline
from harness.reader import CommittedReader
from harness.topics import create_topics
from harness.workload import Workload

PARTITIONS = 8


def fill(bootstrap: str, topic: str, workload: Workload) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "enable.idempotence": True,
                         "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000})
    size = 0
    for record in workload.generate():
        fields = {"id": record.id, "key": record.key, "seq": record.seq, "ts": record.ts,
                  "amount": record.amount, "amount_cents": int(record.amount * 100)}
        value = json.dumps(fields, separators=(",", ":")).encode()  # compact, as Spark's to_json writes
        size += len(value)
        while True:
            try:
                producer.produce(topic, value, record.key.encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)
    return size


def plain_loop(bootstrap: str, topic: str, total: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "fetch.max.bytes": 64 * 1024 * 1024,
                         "max.partition.fetch.bytes": 16 * 1024 * 1024})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    started = time.perf_counter()
    seen = 0
    while seen < total:
        for message in consumer.consume(10_000, timeout=1.0):
            if message.error() is None:
                message.value()
                seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return total / elapsed


def reader_and_checker(bootstrap: str, topic: str, workload: Workload, measure_memory: bool) -> tuple[float, int]:
    pipeline = load_pipeline("fixtures.pipelines.passthrough")
    expected = pipeline.model(json.loads(r.to_json()) for r in workload.generate())
    if measure_memory:
        tracemalloc.start()
    started = time.perf_counter()
    output_check = OutputCheck(pipeline.checkers(), expected, pipeline.identity)
    read = CommittedReader(bootstrap).read(topic, on_batch=output_check.feed)
    verdict = output_check.verdict(read)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
    if measure_memory:
        tracemalloc.stop()
    assert verdict.outcome == "pass", verdict.summary()
    return workload.records / elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    terminate_like_ctrl_c()
    images.build_all()
    workload = Workload(args.records, seed=3)
    with Cluster(workers=0) as cluster:
        bootstrap = cluster.kafka.bootstrap_direct
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        create_topics(cluster.kafka.admin(), [topic], PARTITIONS)
        size = fill(bootstrap, topic, workload)
        plain, harness = [], []
        for _ in range(args.repeats):
            plain.append(plain_loop(bootstrap, topic, args.records))
            harness.append(reader_and_checker(bootstrap, topic, workload, measure_memory=False)[0])
        _, peak = reader_and_checker(bootstrap, topic, workload, measure_memory=True)
    p, h = statistics.median(plain), statistics.median(harness)
    print(f"{args.records} records, {size / args.records:.0f} bytes each, {PARTITIONS} partitions, "
          f"median of {args.repeats}")
    print(f"plain consume loop:   {p:>10,.0f} records/s")
    print(f"reader + checker:     {h:>10,.0f} records/s")
    print(f"ratio:                {h / p:.2f} (goal >= 0.7)")
    print(f"checker peak memory:  {peak / 2**20:.0f} MiB (Python allocations, tracemalloc; goal <= 1024 MiB)")


if __name__ == "__main__":
    main()
