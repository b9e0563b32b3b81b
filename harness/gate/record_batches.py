"""What a Produce request writes, record by record, as fingerprints: a record's topic, key and value, hashed.

Two attempts of one task write the same records (a passthrough's, an aggregation's: the same input gives the
same output), whichever producer, transaction, timestamp or headers each uses. The gate compares them to see
a task's copy on the wire (harness.gate.copies), so that evidence of a copy comes from outside Spark's JVMs.

Record batches (magic 2, every client since Kafka 0.11) are read here, not with kafka-python's
`DefaultRecordBatch`: that decompresses a batch whole, with no bound, and a batch is what the system under
test sends. Here a batch's records decompress to at most MAX_RECORDS_BYTES; gzip and zstd are read (the
standard library's, fastavro's `zstandard`), snappy and lz4 are not. Anything unexpected is a ValueError,
which the gate records as the write left unread.
"""

from __future__ import annotations

import hashlib
import struct
import zlib

from harness.gate.protocol import uvarint

HEADER = 61  # a batch's fixed fields, up to and including its record count
MAGIC_AT, ATTRIBUTES_AT, COUNT_AT = 16, 21, 57
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# What one request's records may decompress to: a producer's request is at most a megabyte by default (the
# Java client's max.request.size, librdkafka's message.max.bytes); a batch past this is left unread.
MAX_RECORDS_BYTES = 16 * 2**20


def fingerprints(data: bytes | memoryview, topic: str) -> list[bytes]:
    """Every record's fingerprint in a partition's record set (one or more batches), in order."""
    data = memoryview(data)
    out: list[bytes] = []
    budget = MAX_RECORDS_BYTES
    pos = 0
    while pos < len(data):
        if len(data) - pos < HEADER:
            raise ValueError(f"a record batch cut short ({len(data) - pos} bytes left of a {HEADER}-byte header)")
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if length < HEADER - 12 or end > len(data):
            raise ValueError(f"a record batch of {length} bytes where {len(data) - pos - 12} remain")
        if data[pos + MAGIC_AT] != 2:
            raise ValueError(f"a message set of magic {data[pos + MAGIC_AT]} (before Kafka 0.11): not read")
        (attributes,) = struct.unpack_from(">h", data, pos + ATTRIBUTES_AT)
        (count,) = struct.unpack_from(">i", data, pos + COUNT_AT)
        records = _decompressed(bytes(data[pos + HEADER:end]), attributes & 0x07, budget)
        budget -= len(records)
        out += _records(records, count, topic)
        pos = end
    return out


def _decompressed(records: bytes, codec: int, budget: int) -> bytes:
    if codec == 0:
        plain = records
    elif codec == 1:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip's framing
        plain = inflate.decompress(records, budget + 1)
    elif codec == 4:
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(records) as stream:
            plain = stream.read(budget + 1)
    else:
        raise ValueError(f"records compressed with {CODECS.get(codec, f'codec {codec}')}: not read")
    if len(plain) > budget:
        raise ValueError(f"a request's records decompress to more than {MAX_RECORDS_BYTES:,} bytes: not read")
    return plain


def _records(data: bytes, count: int, topic: str) -> list[bytes]:
    """`count` records' fingerprints (each: length, attributes, timestamp and offset deltas, key, value,
    headers); a count the bytes do not hold is an error."""
    if not 0 <= count <= len(data):  # a record takes at least a byte
        raise ValueError(f"a batch of {count} records in {len(data)} bytes")
    out = []
    pos = 0
    for _ in range(count):
        length, pos = _varint(data, pos)
        end = pos + length
        if length <= 0 or end > len(data):
            raise ValueError(f"a record of {length} bytes where {len(data) - pos} remain")
        at = pos + 1  # attributes
        _, at = _varint(data, at)  # timestamp delta
        _, at = _varint(data, at)  # offset delta
        key, at = _bytes(data, at, end)
        value, at = _bytes(data, at, end)
        digest = hashlib.blake2b(digest_size=16)
        for part in (topic.encode(), key, value):
            digest.update(b"-" if part is None else len(part).to_bytes(4, "big") + part)
        out.append(digest.digest())
        pos = end
    return out


def _bytes(data: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = _varint(data, pos)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise ValueError("a record's key or value runs past the record")
    return data[pos:pos + length], pos + length


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (a record's fields)."""
    value, pos = uvarint(data, pos)
    return (value >> 1) ^ -(value & 1), pos
