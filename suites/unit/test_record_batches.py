"""A Produce request's records as fingerprints (harness.gate.record_batches), and a task's copy seen from
them (harness.gate.copies): what the speculation rows count as a copy, from outside Spark's JVMs."""

from __future__ import annotations

import gzip
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from harness.gate.copies import CopiedWrites
from harness.gate.record_batches import MAX_RECORDS_BYTES, fingerprints

pytestmark = pytest.mark.unit
RECORDS = [(b"k1", b"v1"), (None, b"v2"), (b"k3", None)]
NONE, GZIP, ZSTD = 0, 1, 4


def batch(records: list[tuple[bytes | None, bytes | None]], codec: int = NONE, headers: tuple = (),
          stamp: int = 1000) -> bytes:
    """A record batch as a producer sends it (kafka-python's builder: the wire format, every codec)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=2**20)
    for offset, (key, value) in enumerate(records):
        builder.append(offset, timestamp=stamp + offset, key=key, value=value, headers=list(headers))
    return bytes(builder.build())


def test_the_same_records_have_the_same_fingerprints_however_sent() -> None:
    """Compression, timestamps, headers and batching are the producer's: a copy's records match anyway."""
    plain = fingerprints(batch(RECORDS), "out")
    assert len(plain) == len(set(plain)) == 3
    assert fingerprints(batch(RECORDS, GZIP, headers=(("attempt", b"2"),), stamp=9), "out") == plain
    assert fingerprints(batch(RECORDS, ZSTD), "out") == plain
    assert fingerprints(batch(RECORDS[:1]) + batch(RECORDS[1:]), "out") == plain
    assert fingerprints(batch(RECORDS), "other") != plain
    assert fingerprints(batch([(b"k1", b"v2")]), "out")[0] not in plain  # key and value are told apart


def with_codec(data: bytes, codec: int) -> bytes:
    attributes = struct.unpack_from(">h", data, 21)[0]
    return data[:21] + struct.pack(">h", (attributes & ~0x07) | codec) + data[23:]


@pytest.mark.parametrize(("data", "why"), [
    (with_codec(batch(RECORDS), 3), "compressed with lz4: not read"),
    (with_codec(batch(RECORDS), 2), "compressed with snappy: not read"),
    (batch(RECORDS)[:40], "cut short"),
    (batch(RECORDS)[:-3], "where"),
    (batch(RECORDS)[:16] + b"\x01" + batch(RECORDS)[17:], "magic 1"),
    (batch(RECORDS)[:57] + struct.pack(">i", 10**6) + batch(RECORDS)[61:], "a batch of 1000000 records"),
    (batch(RECORDS)[:61] + b"\xff" * 11 + batch(RECORDS)[72:], "varint"),
])
def test_what_cannot_be_read_is_a_value_error_saying_why(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        fingerprints(data, "out")


def test_a_compressed_bomb_is_refused_past_its_bound_undecompressed() -> None:
    """17 MiB of one record's value, gzip-compressed to kilobytes: decompressed no further than the bound."""
    bomb = batch([(b"k", b"\0" * (MAX_RECORDS_BYTES + 2**20))], GZIP)
    assert len(bomb) < 2**16
    with pytest.raises(ValueError, match="decompress to more than"):
        fingerprints(bomb, "out")
    assert gzip.decompress(bomb[61:])  # a real gzip stream: refused for its size, not its form


def test_a_copy_is_another_container_writing_a_stopped_one_s_records_before_or_after_it() -> None:
    first, other = fingerprints(batch(RECORDS), "out"), fingerprints(batch([(b"x", b"y")]), "out")
    copies = CopiedWrites()
    assert not copies.written("w1", first, stopped=())
    assert not copies.written("w1", first, stopped=("w1",))  # its own retry is no copy
    assert not copies.written("w2", first, stopped=())  # written again, but with nobody stopped: a retry after a loss
    assert copies.written("w2", first + other, stopped=("w1",)) == {("w1", "w2"): 3}
    later = CopiedWrites()  # the stopped attempt writes after its copy: counted when it goes on
    assert not later.written("w2", first, stopped=("w1",))
    assert later.written("w1", first, stopped=()) == {("w1", "w2"): 3}
    assert not later.written("w1", first, stopped=())  # once


def test_past_its_limit_the_copies_remember_no_more_and_say_so() -> None:
    copies = CopiedWrites(limit=2)
    copies.written("w1", fingerprints(batch(RECORDS), "out"), stopped=())
    assert copies.full
