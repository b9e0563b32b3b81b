"""Kafka request framing, as much as the gate needs: the request header of every request, and the few
fields of the transactional requests that name a transaction point.

Bodies of EndTxn, InitProducerId and AddPartitionsToTxn are decoded with kafka-python's message
classes (generated from Kafka's own JSON schemas, every version). Produce bodies can be megabytes, so
they are walked here without decoding their records: the transactional id, acks, the partitions written
(topic names up to version 12; from 13 on a topic is named by its id, `id:<hex>`) and where each partition's
records are in the request (harness.gate.record_batches reads them when a copy is looked for).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from harness.quiet import dependency_noise_hidden

with dependency_noise_hidden():
    from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest

PRODUCE = 0
INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
END_TXN = 26
API_VERSIONS = 18

BODY_CLASSES = {
    END_TXN: EndTxnRequest, INIT_PRODUCER_ID: InitProducerIdRequest, ADD_PARTITIONS_TO_TXN: AddPartitionsToTxnRequest
}
PRODUCE_FIRST_FLEXIBLE = 9
PRODUCE_FIRST_TOPIC_ID = 13
# The largest frame the gate reads, either way. It holds a whole frame before forwarding it, and a frame's
# size is whatever its sender says: unbounded, one connection of the sink could make the harness allocate
# 2 GiB. 100 MiB is Kafka's own ceiling on a request (the broker's socket.request.max.bytes default: it
# closes the connection on a bigger one, as the gate does), and twice the largest response a client of the
# system under test asks for by default (a consumer's fetch.max.bytes, 50 MiB, Spark's Kafka source's too).
MAX_FRAME = 100 * 2**20
MIN_FRAME = 4  # the fields the gate reads first: a request's api key and version, a response's correlation id


@dataclass(frozen=True)
class RequestInfo:
    """What the gate knows of one request."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    transactional_id: str | None = None
    committed: bool | None = None  # EndTxn only
    producer_id: int | None = None
    producer_epoch: int | None = None
    acks: int | None = None  # Produce only: 0 means the broker sends no response
    transaction_timeout_ms: int | None = None  # InitProducerId only: the sink's transaction.timeout.ms
    partitions: tuple[tuple[str, int], ...] = ()  # AddPartitionsToTxn: the (topic, partition)s it adds; Produce: writes
    record_sets: tuple[tuple[str, int, int], ...] = ()  # Produce: (topic, start, end) of each partition's records


def uvarint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint (Kafka's compact lengths, and a record's fields before their zigzag), at most 10
    bytes; a ValueError past the data's end or that bound."""
    value = shift = 0
    for _ in range(10):
        if pos >= len(data):
            raise ValueError("a varint runs past its data")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("a varint of more than 10 bytes")


def _skip_tagged_fields(data: bytes, pos: int) -> int:
    count, pos = uvarint(data, pos)
    for _ in range(count):
        _, pos = uvarint(data, pos)
        size, pos = uvarint(data, pos)
        pos += size
    return pos


def _flexible(api_key: int, api_version: int) -> bool:
    """Whether a request uses header v2 (tagged fields); known for the APIs whose bodies we read."""
    if api_key == PRODUCE:
        return api_version >= PRODUCE_FIRST_FLEXIBLE
    if api_key in BODY_CLASSES:
        return BODY_CLASSES[api_key].flexible_version_q(api_version)
    raise ValueError(f"no flexible-version table for api {api_key}")


def parse_request(payload: bytes) -> RequestInfo:
    """Decode a request (the frame without its 4-byte size): header always, body where it names a txn point."""
    api_key, api_version, correlation_id, client_len = struct.unpack_from(">hhih", payload, 0)
    pos = 10
    client_id = None
    if client_len >= 0:
        client_id = payload[pos:pos + client_len].decode(errors="replace")
        pos += client_len
    if api_key != PRODUCE and api_key not in BODY_CLASSES:
        return RequestInfo(api_key, api_version, correlation_id, client_id)
    if _flexible(api_key, api_version):
        pos = _skip_tagged_fields(payload, pos)
    if api_key == PRODUCE:
        transactional_id, acks, sets = _produce_body(payload, pos, api_version)
        return RequestInfo(api_key, api_version, correlation_id, client_id, transactional_id, acks=acks,
                           partitions=tuple((topic, index) for topic, index, _, _ in sets),
                           record_sets=tuple((topic, start, end) for topic, _, start, end in sets))
    body = BODY_CLASSES[api_key].decode(io.BytesIO(payload[pos:]).read(), version=api_version)
    if api_key == END_TXN:
        return RequestInfo(api_key, api_version, correlation_id, client_id, body.transactional_id,
                           bool(body.committed), body.producer_id, body.producer_epoch)
    if api_key == ADD_PARTITIONS_TO_TXN:
        if api_version <= 3:  # clients use 0-3; 4+ batches transactions, broker to broker
            added = tuple((topic.name, p) for topic in body.v3_and_below_topics for p in topic.partitions)
            return RequestInfo(api_key, api_version, correlation_id, client_id, body.v3_and_below_transactional_id,
                               partitions=added)
        transactions = body.transactions
        return RequestInfo(api_key, api_version, correlation_id, client_id,
                           transactions[0].transactional_id if transactions else None)
    return RequestInfo(api_key, api_version, correlation_id, client_id, body.transactional_id,
                       transaction_timeout_ms=body.transaction_timeout_ms)


def _produce_body(payload: bytes, pos: int, api_version: int) -> tuple[str | None, int,
                                                                        list[tuple[str, int, int, int]]]:
    """A Produce body's transactional id (v3+), acks, and the (topic, partition, start, end)s it writes:
    the record sets are skipped by their sizes, never decoded."""
    flexible = api_version >= PRODUCE_FIRST_FLEXIBLE
    transactional_id = None
    if api_version >= 3:
        transactional_id, pos = _string(payload, pos, flexible)
    acks = struct.unpack_from(">h", payload, pos)[0]
    pos += 6  # acks, timeout_ms
    written = []
    topics, pos = _count(payload, pos, flexible)
    for _ in range(topics):
        if api_version >= PRODUCE_FIRST_TOPIC_ID:
            topic, pos = f"id:{payload[pos:pos + 16].hex()}", pos + 16
        else:
            name, pos = _string(payload, pos, flexible)
            topic = name or ""
        partitions, pos = _count(payload, pos, flexible)
        for _ in range(partitions):
            (index,) = struct.unpack_from(">i", payload, pos)
            if flexible:
                size, start = uvarint(payload, pos + 4)
                pos = start + max(size - 1, 0)
                written.append((topic, index, start, pos))
                pos = _skip_tagged_fields(payload, pos)
            else:
                (size,) = struct.unpack_from(">i", payload, pos + 4)
                pos += 8 + max(size, 0)
                written.append((topic, index, pos - max(size, 0), pos))
        if flexible:
            pos = _skip_tagged_fields(payload, pos)
    return transactional_id, acks, written


def _string(payload: bytes, pos: int, flexible: bool) -> tuple[str | None, int]:
    """A nullable string: compact (uvarint length + 1) in flexible versions, else int16 length."""
    if flexible:
        length, pos = uvarint(payload, pos)
        length -= 1
    else:
        (length,) = struct.unpack_from(">h", payload, pos)
        pos += 2
    if length < 0:
        return None, pos
    return payload[pos:pos + length].decode(errors="replace"), pos + length


def _count(payload: bytes, pos: int, flexible: bool) -> tuple[int, int]:
    """An array's length: compact (uvarint length + 1) in flexible versions, else int32."""
    if flexible:
        count, pos = uvarint(payload, pos)
        return max(count - 1, 0), pos
    (count,) = struct.unpack_from(">i", payload, pos)
    return max(count, 0), pos + 4


PRODUCE_READ_UP_TO = PRODUCE_FIRST_TOPIC_ID - 1  # the newest Produce version whose topics the gate reads by name


def capped_api_versions(payload: bytes, version: int) -> bytes:
    """An ApiVersions response (`version`: its request's) with Produce's newest version capped at
    PRODUCE_READ_UP_TO, so that a client never names a topic by id (KIP-516, Produce v13) where the gate
    matches writes by name; the same length, patched in place. Its header is v0 in every version (a
    correlation id alone), its body flexible from v3."""
    flexible = version >= 3
    count, pos = _count(payload, 4 + 2, flexible)  # after the correlation id and the error code
    out = bytearray(payload)
    for _ in range(count):
        api_key, _, newest = struct.unpack_from(">hhh", payload, pos)
        if api_key == PRODUCE and newest > PRODUCE_READ_UP_TO:
            struct.pack_into(">h", out, pos + 4, PRODUCE_READ_UP_TO)
        pos += 6
        if flexible:
            pos = _skip_tagged_fields(payload, pos)
    return bytes(out)


def response_correlation_id(payload: bytes) -> int:
    """The correlation id of a response (its first field in every header version)."""
    return struct.unpack_from(">i", payload, 0)[0]
