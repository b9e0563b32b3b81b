"""Kafka as production runs it: the broker rows of the matrix on three brokers (replication 3,
min.insync.replicas 2). The reference sinks pass each; `bad_resend_failed_only`, which passes the
single-broker quick matrix, loses data when a leader's ISR shrinks below min.insync."""

from __future__ import annotations

import json
import time

import pytest
from test_oracle import harness_check, write_output

from harness.certify.matrix import BROKER_MATRIX
from harness.certify.rows import MatrixRun
from harness.client.topics import create_topics, unique_name
from harness.client.workload import Workload, WorkloadProducer
from harness.cluster.topology import Cluster
from harness.sink_matrix import check_row, run_row, short_name

TXN = "transactional"
DRIVER_TXN = "driver_transactional"
ROWS = {row.name: row for row in BROKER_MATRIX}
KNOWN = [
    *[(sink, row.name, "pass") for sink in (TXN, DRIVER_TXN) for row in BROKER_MATRIX if row.applies(TXN)],
    ("bad_resend_failed_only", "isr-shrink-txn.first_write", "lost"),
]


@pytest.mark.chaos
@pytest.mark.parametrize("case", [pytest.param(case, id=f"{case[0]}::{case[1]}") for case in KNOWN])
def test_broker_row(three_brokers: Cluster, case: tuple[str, str, str], stall_timeout: float) -> None:
    sink, name, expected = case
    row = ROWS[name]
    result = run_row(three_brokers, MatrixRun(sink, stall_timeout=stall_timeout), row, f"{short_name(sink)}-{name}")
    check_row(result, expected)
    aimed = result.events("fault.target")
    assert aimed, "the fault named no Kafka node"
    if row.faults[0].startswith("kill:"):  # the node stayed down: another broker took its partitions over
        killed = aimed[0]["container"]
        assert any(e["was"] == killed for e in result.events("kafka.leader")), f"nothing taken over from {killed}"
    assert result.events("kafka.in_sync"), "healing did not wait for every replica to be in sync"
    if expected != "pass":
        explained = [e["explanation"] for e in result.verdict.anomalies[expected].examples if "explanation" in e]
        assert explained, f"no {expected} example explained from the broker's log: {result.summary()}"


@pytest.mark.integration
def test_check_reads_every_partition_from_whichever_broker_leads_it(three_brokers: Cluster) -> None:
    """With the leader of an output partition down, `check` (and the reader under it) still reads every
    partition to its last stable offset: the correct output passes, a damaged one is named."""
    kafka = three_brokers.kafka
    bootstrap = kafka.bootstrap_direct
    input_topic, output, damaged = (unique_name("brokers-check", role) for role in ("in", "out", "bad"))
    create_topics(kafka.admin(), [input_topic, output, damaged], 4)
    workload = Workload(2_000, seed=5)
    WorkloadProducer(bootstrap).produce(input_topic, workload.inputs())
    correct = [json.loads(record.to_json()) for record in workload.generate()]
    write_output(bootstrap, output, correct)
    write_output(bootstrap, damaged, correct[10:] + correct[100:107])
    leader = kafka.leader(output, 0)
    leader.get_wrapped_container().kill()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if kafka.leader(output, 0).alias != leader.alias:
                    break
            except LookupError:  # no leader for a moment: the controller has not fenced the dead one yet
                pass
            time.sleep(1)
        else:
            pytest.fail(f"{output}-0 still led by the killed {leader.alias} after 60 s")
        run = harness_check(bootstrap, input_topic, output)
        assert run.returncode == 0 and "PASS: observed exactly-once" in run.stdout, run.stdout + run.stderr
        run = harness_check(bootstrap, input_topic, damaged)
        assert run.returncode == 1 and "anomalies: duplicate=7, lost=10" in run.stdout, run.stdout + run.stderr
    finally:
        leader.get_wrapped_container().start()
        assert not kafka.wait_in_sync(120), "the killed broker did not catch up"
