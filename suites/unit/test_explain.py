"""Anomalies explained from the broker's log: DumpLogSegments' output parsed, and each copy of a duplicate
or a lost record's write put in words with its transaction, its writer and the faults between."""

from __future__ import annotations

import pytest

from harness.checker.verdict import Anomaly, Verdict
from harness.client.records import OutputRecord, Records
from harness.cluster.dump_log import batch_at, end_of, parse
from harness.run.explain import Explainer, explain

pytestmark = pytest.mark.unit

T0 = 1_795_546_800.0  # the scenario's start, in seconds
DUMP = """Dumping /var/lib/kafka/s-out-1/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 4 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1795546810000 size: 200 magic: 2 compresscodec: none crc: 1 isvalid: true
| offset: 0 CreateTime: 1795546810000 keySize: 2 valueSize: 10 sequence: 0 headerKeys: [] key: k0 payload: {"id":"a"}
| offset: 1 CreateTime: 1795546810000 keySize: 2 valueSize: 10 sequence: 1 headerKeys: [] key: k0 payload: {"id":"b"}
baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 4 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 200 CreateTime: 1795546812400 size: 78 magic: 2 compresscodec: none crc: 2 isvalid: true
| offset: 2 CreateTime: 1795546812400 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: 0 lastSequence: 0 producerId: 7 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 278 CreateTime: 1795546830000 size: 100 magic: 2 compresscodec: none crc: 3 isvalid: true
| offset: 3 CreateTime: 1795546830000 keySize: 2 valueSize: 10 sequence: 0 headerKeys: [] key: k0 payload: {"id":"a"}
baseOffset: 4 lastOffset: 4 count: 1 baseSequence: 0 lastSequence: 0 producerId: 9 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 378 CreateTime: 1795546831000 size: 100 magic: 2 compresscodec: none crc: 4 isvalid: true
| offset: 4 CreateTime: 1795546831000 keySize: 2 valueSize: 10 sequence: 0 headerKeys: [] key: k0 payload: {"id":"c"}
baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 478 CreateTime: 1795546835100 size: 78 magic: 2 compresscodec: none crc: 5 isvalid: true
| offset: 5 CreateTime: 1795546835100 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 6 lastOffset: 6 count: 1 baseSequence: -1 lastSequence: -1 producerId: 9 producerEpoch: 1 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 556 CreateTime: 1795546840200 size: 78 magic: 2 compresscodec: none crc: 6 isvalid: true
| offset: 6 CreateTime: 1795546840200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0
"""  # noqa: E501 - the tool's lines as it prints them
EVENTS = [
    {"t": T0, "type": "scenario.start", "output_topic": "s-out"},
    {"t": T0 + 9, "type": "point", "point": "txn.commit", "container": "run-spark-worker-1", "role": "executors",
     "producer_id": 4, "producer_epoch": 0},
    {"t": T0 + 14.0, "type": "trigger", "step": "delay:sender@txn.commit#2/70s"},
    {"t": T0 + 33, "type": "point", "point": "txn.commit", "container": "run-spark-worker-2", "role": "executors",
     "producer_id": 7, "producer_epoch": 0},
    {"t": T0 + 38.0, "type": "trigger", "step": "kill:driver@txn.pre_commit#3"},
]


def identity(value: bytes) -> str:
    return value.decode().split('"id":"')[1].split('"')[0]


def test_the_tools_output_parses_into_batches_with_their_markers() -> None:
    batches = parse(DUMP, 1)
    assert [(b.base, b.last, b.producer_id, b.control, b.marker) for b in batches] == [
        (0, 1, 4, False, None), (2, 2, 4, True, "COMMIT"), (3, 3, 7, False, None), (4, 4, 9, False, None),
        (5, 5, 7, True, "COMMIT"), (6, 6, 9, True, "ABORT")]
    assert batches[0].payloads == {0: '{"id":"a"}', 1: '{"id":"b"}'}
    data = batch_at(batches, 3)
    assert data is not None and data.producer_id == 7
    ended = end_of(batches, data)
    assert ended is not None and ended.marker == "COMMIT" and ended.base == 5


def test_a_duplicate_is_explained_by_both_transactions_and_the_fault_between() -> None:
    records = Records([OutputRecord(1, 0, b"k0", b'{"id":"a"}'), OutputRecord(1, 1, b"k0", b'{"id":"b"}'),
                       OutputRecord(1, 3, b"k0", b'{"id":"a"}')])
    verdict = Verdict("fail", "at-least-once", {"duplicate": Anomaly("duplicate", 1, [{"id": "a", "count": 2}]),
                                                "lost": Anomaly("lost", 2, [{"id": "c"}, {"id": "z"}])}, 3, 3, 2)
    explain(verdict, Explainer({1: parse(DUMP, 1)}, EVENTS), records, map(identity, records.values), identity)
    assert verdict.anomalies["duplicate"].examples[0]["explanation"] == (
        "written 2 times: p1@0 in transaction (pid 4, epoch 0) by run-spark-worker-1 (executors), committed at "
        "12.4 s; p1@3 in transaction (pid 7, epoch 0) by run-spark-worker-2 (executors), committed at 35.1 s; "
        "between them: delay:sender@txn.commit#2/70s at 14.0 s")
    lost = verdict.anomalies["lost"].examples
    assert lost[0]["explanation"] == ("its writes: p1@4 in transaction (pid 9, epoch 1) by a producer the gate "
                                      "did not see, aborted at 40.2 s; between its write and its end: "
                                      "kill:driver@txn.pre_commit#3 at 38.0 s")
    assert lost[1]["explanation"].startswith("no write of it found in the output's log")
