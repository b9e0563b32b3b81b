"""Reader + checker throughput against a plain confluent-kafka consume loop, on the real broker.

    python benchmarks/checker.py [--records 1000000] [--repeats 5] [--pipeline passthrough|fraud_windows|running_totals]

Writes about N output records of the pipeline (every result its model expects, as Spark's to_json
writes it) over 8 partitions, then times, in one run and alternating, a plain consume loop over the
topic and the harness's reader plus the pipeline's checkers. Prints medians, the ratio of each
repetition's pair (median and worst: the goal, >= 0.7, must hold at both) and the checker's peak
memory (goal <= 1 GiB).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from harness.checker import Expected
from harness.client.reader import CommittedReader
from harness.client.topics import create_topics
from harness.client.workload import Workload
from harness.interrupt import run_script
from harness.run.session import session
from harness.subject.pipeline import Pipeline, load_pipeline

PARTITIONS = 8


# per pipeline: the workload that gives about one output result per input record, and a result's JSON
WORKLOADS = {
    "passthrough": {},
    # many users, one event a user and minute at most: about one window per record
    "fraud_windows": {"keys": 50_000, "key_skew": 0.0},
    "running_totals": {},
}


def output_of(name: str, expected: Expected) -> dict:
    """The result Spark's to_json writes for one expected output."""
    if name == "fraud_windows":
        return {"user": expected.key, "window_start": expected.seq, **expected.value}  # type: ignore[dict-item]
    return {"user": expected.key, "count": expected.seq, "total_cents": expected.value}


def fill(bootstrap: str, topic: str, name: str, workload: Workload, expected: dict[str, Expected]) -> int:
    """Write the pipeline's whole expected output to the topic; its size in bytes."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "enable.idempotence": True,
                         "compression.type": "lz4", "queue.buffering.max.messages": 1_000_000})
    if name == "passthrough":
        results = ((r.key, {"id": r.id, "key": r.key, "seq": r.seq, "ts": r.ts, "amount": r.amount,
                            "amount_cents": int(r.amount * 100)}) for r in workload.generate())
    else:  # in model order: a user's running totals in the order they grow
        results = ((e.key, output_of(name, e)) for e in expected.values())
    size = 0
    for key, fields in results:
        value = json.dumps(fields, separators=(",", ":")).encode()  # compact, as Spark's to_json writes
        size += len(value)
        while True:
            try:
                producer.produce(topic, value, key.encode())
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


def reader_and_checker(bootstrap: str, topic: str, pipeline: Pipeline, expected: dict[str, Expected], total: int,
                       measure_memory: bool) -> tuple[float, int]:
    if measure_memory:
        tracemalloc.start()
    started = time.perf_counter()
    output_check = pipeline.output_check(expected)
    read = CommittedReader(bootstrap).read(topic, on_batch=output_check.feed)
    verdict = output_check.verdict(read)
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] if measure_memory else 0
    if measure_memory:
        tracemalloc.stop()
    assert verdict.outcome == "pass", verdict.summary()
    return total / elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pipeline", choices=sorted(WORKLOADS), default="passthrough")
    args = parser.parse_args()
    pipeline = load_pipeline(f"harness.catalog.pipelines.{args.pipeline}")
    workload = pipeline.workload(Workload(args.records, seed=3, **WORKLOADS[args.pipeline]))
    expected = pipeline.expected(workload.inputs())
    total = args.records if args.pipeline == "passthrough" else len(expected)
    with session(workers=0) as opened:
        cluster = opened.cluster
        bootstrap = cluster.kafka.bootstrap_direct
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        create_topics(cluster.kafka.admin(), [topic], PARTITIONS)
        size = fill(bootstrap, topic, args.pipeline, workload, expected)
        plain, harness = [], []
        for _ in range(args.repeats):
            plain.append(plain_loop(bootstrap, topic, total))
            harness.append(reader_and_checker(bootstrap, topic, pipeline, expected, total, measure_memory=False)[0])
        _, peak = reader_and_checker(bootstrap, topic, pipeline, expected, total, measure_memory=True)
    p, h = statistics.median(plain), statistics.median(harness)
    in_order = [c / q for c, q in zip(harness, plain, strict=True)]  # each pair ran back to back
    ratios = sorted(in_order)
    print(f"{args.pipeline}: {total} output records, {size / total:.0f} bytes each, {PARTITIONS} partitions, "
          f"median of {args.repeats}")
    print(f"plain consume loop:   {p:>10,.0f} records/s (spread {min(plain):,.0f} to {max(plain):,.0f})")
    print(f"reader + checker:     {h:>10,.0f} records/s (spread {min(harness):,.0f} to {max(harness):,.0f})")
    print(f"ratio per repetition: median {statistics.median(ratios):.2f}, worst {ratios[0]:.2f}, best {ratios[-1]:.2f} "
          "(goal >= 0.7 at the median and the worst)")
    print(f"ratios in the order run:  {' '.join(f'{r:.2f}' for r in in_order)}")
    print(f"checker peak memory:  {peak / 2**20:.0f} MiB (Python allocations, tracemalloc; goal <= 1024 MiB)")


if __name__ == "__main__":
    run_script(main)
