"""The oracle against a real broker: `python -m harness check` on crafted topics names exactly the
anomalies put there; an open transaction is `stuck`; aborted records are counted; bad input is one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from harness.client.reader import CommittedReader
from harness.client.topics import create_topics, unique_name
from harness.client.workload import Workload, WorkloadProducer
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]


def write_output(bootstrap: str, topic: str, records: list[dict | bytes | None], keyed: bool = True,
                 partition: int | None = None) -> None:
    """Write records (dicts as JSON; bytes and None, a tombstone, as they are), by key or spread with none."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for record in records:
        value = json.dumps(record).encode() if isinstance(record, dict) else record
        key = record["key"].encode() if keyed and isinstance(record, dict) else None
        producer.produce(topic, value, key, **({} if partition is None else {"partition": partition}))
    producer.flush(30)


def harness_check(bootstrap: str, input_topic: str, output_topic: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness", "check", "--bootstrap", bootstrap, "--input", input_topic,
         "--output", output_topic, "--stable-timeout", "3", *extra],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )


@pytest.fixture(scope="module")
def crafted(cluster):
    """An input topic of 2,000 records and its correct passthrough output as dicts."""
    bootstrap = cluster.kafka.bootstrap_direct
    input_topic = unique_name("oracle", "in")
    create_topics(cluster.kafka.admin(), [input_topic], 4)
    workload = Workload(2_000, seed=5)
    WorkloadProducer(bootstrap).produce(input_topic, workload.inputs())
    correct = [json.loads(r.to_json()) for r in workload.generate()]
    return bootstrap, input_topic, correct


def new_output(cluster, records: list[dict | bytes | None], keyed: bool = True) -> str:
    topic = unique_name("oracle", "out")
    create_topics(cluster.kafka.admin(), [topic], 4)
    write_output(cluster.kafka.bootstrap_direct, topic, records, keyed)
    return topic


def test_correct_output_is_exactly_once(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    run = harness_check(bootstrap, input_topic, new_output(cluster, correct))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS: observed exactly-once" in run.stdout


def test_duplicates_losses_and_foreign_records_are_named(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    damaged = correct[10:] + correct[100:107] + [{"id": "foreign-1", "key": "k0000", "seq": 1}]
    run = harness_check(bootstrap, input_topic, new_output(cluster, damaged))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "anomalies: duplicate=7, unexpected=1, lost=10" in run.stdout, run.stdout


def test_unreadable_records_are_the_sinks_anomaly_and_every_other_record_is_checked(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    garbage = [b"not json", b"", json.dumps(correct[3]).encode()[:25], None, b'{"ID": "x"}', b"[1, 2]",
               b'{"id": "' + b"x" * 500_000]  # a truncated record, a tombstone, a wrong schema, a huge value
    run = harness_check(bootstrap, input_topic, new_output(cluster, correct[:900] + garbage + correct[900:]
                                                           + correct[:4]))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "anomalies: duplicate=4, unreadable=7" in run.stdout, run.stdout
    assert "observed none" in run.stdout and '"reason": "JSONDecodeError' in run.stdout, run.stdout


def test_output_spread_over_partitions_without_a_key_is_exactly_once(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    run = harness_check(bootstrap, input_topic, new_output(cluster, correct, keyed=False))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS: observed exactly-once" in run.stdout


def test_a_reordering_within_one_partition_is_caught(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    key = correct[0]["key"]
    swapped = [r for r in correct if r["key"] == key]
    swapped[1], swapped[2] = swapped[2], swapped[1]  # seq 3 before seq 2 of one key, in one partition
    topic = unique_name("oracle", "out")
    create_topics(cluster.kafka.admin(), [topic], 4)
    write_output(bootstrap, topic, [r for r in correct if r["key"] != key])
    write_output(bootstrap, topic, swapped, partition=1)
    run = harness_check(bootstrap, input_topic, topic)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "anomalies: reordered=1" in run.stdout, run.stdout


def test_open_transaction_is_stuck_and_aborted_records_are_counted(cluster, crafted) -> None:
    bootstrap, input_topic, correct = crafted
    topic = new_output(cluster, correct)
    aborting = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_name("oracle", "abort")})
    aborting.init_transactions(30)
    aborting.begin_transaction()
    aborting.produce(topic, json.dumps(correct[0]).encode(), correct[0]["key"].encode())
    aborting.flush(30)
    aborting.abort_transaction(30)
    hanging_id = unique_name("oracle", "open")
    hanging = Producer({"bootstrap.servers": bootstrap, "transactional.id": hanging_id,
                        "transaction.timeout.ms": 600_000})
    hanging.init_transactions(30)
    hanging.begin_transaction()
    hanging.produce(topic, json.dumps(correct[1]).encode(), correct[1]["key"].encode())
    hanging.flush(30)

    read = CommittedReader(bootstrap).read(topic, stable_timeout=2, count_uncommitted=True)
    assert read.stuck, "an open transaction must hold the last stable offset below the high watermark"
    assert read.aborted == 2  # one aborted record, one still open: both visible only read_uncommitted
    [named] = read.open_transactions
    assert named["transactional_id"] == hanging_id and named["state"] == "Ongoing" and named["started"]
    assert named["producer_id"] >= 0 and named["partitions"] == sorted(read.stuck)

    run = harness_check(bootstrap, input_topic, topic)
    assert run.returncode == 1
    assert "stuck=" in run.stdout
    assert f'open transaction: {{"transactional_id": "{hanging_id}", "producer_id": {named["producer_id"]}' \
        in run.stdout, run.stdout
    hanging.abort_transaction(30)


def test_bad_input_is_one_line_with_its_exit_status(cluster, crafted) -> None:
    bootstrap, input_topic, _ = crafted
    missing = harness_check(bootstrap, input_topic, "no-such-topic")
    assert missing.returncode == 2 and "topic 'no-such-topic' does not exist" in missing.stderr
    unknown = harness_check(bootstrap, input_topic, input_topic, "--pipeline", "harness.catalog.pipelines.nope")
    assert unknown.returncode == 2 and "pipeline 'harness.catalog.pipelines.nope' cannot be imported" in unknown.stderr
    unreachable = harness_check("127.0.0.1:1", input_topic, input_topic)
    assert unreachable.returncode == 3 and "cannot reach Kafka" in unreachable.stderr


def anomaly_counts(stdout: str) -> dict[str, int]:
    found = re.search(r"anomalies: (.*)$", stdout, re.M)
    assert found, stdout
    return {name: int(count) for name, count in re.findall(r"(\w+)=(\d+)", found.group(1))}


def test_window_results_are_checked_by_count(cluster) -> None:
    bootstrap = cluster.kafka.bootstrap_direct
    pipeline = load_pipeline("fraud_windows")
    workload = pipeline.workload(Workload(4_000, seed=9))
    input_topic = unique_name("oracle-windows", "in")
    create_topics(cluster.kafka.admin(), [input_topic], 4)
    WorkloadProducer(bootstrap).produce(input_topic, workload.inputs())
    expected = pipeline.expected(workload.inputs())
    assert len(expected) > 300

    def result(identity: str, count_change: int = 0) -> bytes:
        user, start = identity.rsplit("@", 1)
        count = expected[identity].value["count"] + count_change
        return json.dumps({"user": user, "window_start": int(start), "count": count, "alert": count > 10}).encode()

    ids = sorted(expected)
    correct = [result(i) for i in ids]
    check_windows = ("--pipeline", "fraud_windows")
    run = harness_check(bootstrap, input_topic, new_output(cluster, correct, keyed=False), *check_windows)
    assert run.returncode == 0, run.stdout + run.stderr

    damaged = [result(i, 1) if i == ids[5] else r for i, r in zip(ids, correct, strict=True) if i != ids[0]]
    damaged += [result(ids[1]), result(ids[2]), result(ids[3], -2)]
    run = harness_check(bootstrap, input_topic, new_output(cluster, damaged, keyed=False), *check_windows)
    assert run.returncode == 1, run.stdout + run.stderr
    assert anomaly_counts(run.stdout) == {"lost": 1, "wrong_value": 1, "duplicate": 2, "divergent": 1}, run.stdout


def test_a_changelog_is_checked_by_running_value(cluster) -> None:
    bootstrap = cluster.kafka.bootstrap_direct
    pipeline = load_pipeline("running_totals")
    workload = Workload(3_000, seed=11, keys=20)
    input_topic = unique_name("oracle-totals", "in")
    create_topics(cluster.kafka.admin(), [input_topic], 4)
    WorkloadProducer(bootstrap).produce(input_topic, workload.inputs())
    expected = pipeline.expected(workload.inputs())
    finals = {want.key: want.seq for want in expected.values() if want.required}

    def update(user: str, count: int, change: int = 0) -> bytes:
        return json.dumps({"user": user, "count": count,
                           "total_cents": expected[f"{user}@{count}"].value + change}).encode()

    def changelog(updates: list[bytes]) -> str:
        """All in one partition: a changelog's order is its partition's."""
        topic = unique_name("oracle-totals", "out")
        create_topics(cluster.kafka.admin(), [topic], 4)
        write_output(bootstrap, topic, list(updates), partition=0)
        return topic

    users = sorted(finals)
    valid = [update(u, c) for u in users for c in sorted({max(1, finals[u] // 3), finals[u]})]
    check_totals = ("--pipeline", "running_totals")
    run = harness_check(bootstrap, input_topic, changelog(valid), *check_totals)
    assert run.returncode == 0, run.stdout + run.stderr

    first, second, third = users[:3]
    damaged = [u for u in valid if json.loads(u)["user"] not in (first, second, third)]
    damaged += [update(first, finals[first]), update(first, max(1, finals[first] // 3))]  # a stale update last
    damaged += [update(second, finals[second], 5)]  # not a running total
    damaged += [update(third, 1)]  # the final total never comes
    run = harness_check(bootstrap, input_topic, changelog(damaged), *check_totals)
    assert run.returncode == 1, run.stdout + run.stderr
    assert anomaly_counts(run.stdout) == {"lost": 1, "wrong_value": 1, "regression": 1}, run.stdout
