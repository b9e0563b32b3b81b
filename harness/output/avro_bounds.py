"""A bound on what an Avro container file the sink wrote (a Hudi instant, a Paimon or Iceberg manifest)
decodes to, checked before its reader (fastavro, pyiceberg) decodes it: each block's records counted and
its data decompressed with a limit, never whole. A crafted block of a few kilobytes of zstd or deflate
would otherwise inflate to gigabytes in the harness's memory. ValueError past a bound, which the table's
reader records as the table corrupt (harness.output.commits.parsed)."""

from __future__ import annotations

import bz2
import lzma
import zlib

MAX_DECOMPRESSED = 256 * 2**20  # a file's blocks decompressed, in all: manifests and instants are kilobytes
MAX_RECORDS = 10_000_000  # a file's records, in all: a record may be a few bytes, or none
MAGIC = b"Obj\x01"
SYNC = 16


class _Reader:
    """Avro's binary encoding, read from bytes: zigzag varint longs, length-prefixed bytes."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def long(self) -> int:
        shift = result = 0
        while True:
            if self.at >= len(self.data) or shift > 63:
                raise ValueError("an Avro long runs past its end")
            byte = self.data[self.at]
            self.at += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise ValueError(f"an Avro field of {size} bytes runs past the file's end")
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def done(self) -> bool:
        return self.at >= len(self.data)


def check_avro(data: bytes, what: str) -> None:
    """ValueError naming `what` when the container file `data` is not one, or decodes past the bounds."""
    reader = _Reader(data)
    if reader.take(len(MAGIC)) != MAGIC:
        raise ValueError(f"{what} is not an Avro container file")
    codec = _metadata(reader).get("avro.codec", b"null").decode(errors="replace")
    reader.take(SYNC)
    records = decompressed = 0
    while not reader.done():
        records += reader.long()
        block = reader.take(reader.long())
        reader.take(SYNC)
        decompressed += _decompressed_size(codec, block, MAX_DECOMPRESSED - decompressed)
        if records > MAX_RECORDS or decompressed > MAX_DECOMPRESSED:
            raise ValueError(f"{what} decodes to more than {MAX_RECORDS:,} records or {MAX_DECOMPRESSED:,} bytes: "
                             "refused undecoded")


def _metadata(reader: _Reader) -> dict[str, bytes]:
    """The header's map of strings to bytes (blocks of entries, a negative count followed by a byte size)."""
    found: dict[str, bytes] = {}
    while count := reader.long():
        if count < 0:
            count = -count
            reader.long()
        for _ in range(count):
            key = reader.take(reader.long()).decode(errors="replace")
            found[key] = reader.take(reader.long())
    return found


def _decompressed_size(codec: str, block: bytes, budget: int) -> int:
    """A block's size once decompressed, found without decompressing more than `budget` + 1 bytes of it."""
    limit = max(budget, 0) + 1
    if codec == "null":
        return len(block)
    if codec == "deflate":  # raw deflate, no header
        inflater = zlib.decompressobj(-15)
        return len(inflater.decompress(block, limit)) + (limit if inflater.unconsumed_tail else 0)
    if codec == "zstandard":
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(block) as stream:
            return len(stream.read(limit))
    if codec == "snappy":  # a raw snappy block says its decompressed length first; 4 bytes of CRC follow it
        return _varint(block)
    if codec == "bzip2":
        return len(bz2.BZ2Decompressor().decompress(block, limit))
    if codec == "xz":
        return len(lzma.LZMADecompressor().decompress(block, limit))
    raise ValueError(f"an Avro codec the harness does not read: {codec!r}")


def _varint(data: bytes) -> int:
    """An unsigned little-endian base-128 varint at the start of `data` (snappy's length)."""
    shift = result = 0
    for byte in data[:10]:
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result
        shift += 7
    raise ValueError("a snappy block without its length")
