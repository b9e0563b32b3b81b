"""Records keep a read's output as columns and give back what was put in."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from harness.client.records import OutputRecord, Records, in_produce_order
from harness.client.workload import SEQUENCE_HEADER

pytestmark = pytest.mark.unit


def messages(n: int) -> list[Message]:
    return [Message(topic="out", partition=n % 3, offset=n, key=f"k{n}".encode(), value=f"v{n}".encode(),
                    timestamp=(1, 1000 + n)) for n in range(n)]


def test_messages_come_back_as_the_same_fields() -> None:
    batch = messages(5)
    records = Records(batch)
    assert len(records) == 5
    for message, record in zip(batch, records, strict=True):
        assert (record.partition(), record.offset(), record.key(), record.value(), record.timestamp()[1],
                record.headers()) == (message.partition(), message.offset(), message.key(), message.value(),
                                      message.timestamp()[1], None)
    assert records.values[2] is batch[2].value()  # the very bytes, not a copy


def test_batches_of_both_kinds_append_in_order_and_slice() -> None:
    records = Records(messages(4))
    records.extend([OutputRecord(7, 99, None, b"x", 5, [(SEQUENCE_HEADER, b"3")])])
    records.extend(Records(messages(2)))
    assert list(records.offsets) == [0, 1, 2, 3, 99, 0, 1]
    assert records[4] == OutputRecord(7, 99, None, b"x", 5, [(SEQUENCE_HEADER, b"3")])
    assert records[-1].value() == b"v1"
    part = records[3:5]
    assert isinstance(part, Records) and list(part.values) == [b"v3", b"x"]


def test_of_keeps_records_and_converts_lists() -> None:
    records = Records(messages(2))
    assert Records.of(records) is records
    assert list(Records.of([OutputRecord(0, 1, None, b"a")]).values) == [b"a"]


def test_produce_order_reads_the_sequence_header_of_kept_records() -> None:
    records = Records(OutputRecord(p, o, None, f"v{s}".encode(), 0, [(SEQUENCE_HEADER, str(s).encode())])
                      for p, o, s in [(0, 0, 2), (1, 0, 0), (0, 1, 3), (1, 1, 1)])
    assert [r.value() for r in in_produce_order(records)] == [b"v0", b"v1", b"v2", b"v3"]
