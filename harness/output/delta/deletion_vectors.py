"""Delta's deletion vectors: the rows of a data file that later versions deleted without rewriting it (a
DELETE, UPDATE or MERGE on a table with `delta.enableDeletionVectors`). An `add` action names the file's
vector; its rows at the vector's positions are not in the table.

The vector is stored inline in the log (`storageType` `i`), in a file beside the table named by a UUID
(`u`), or at a path (`p`); its bytes are a magic number and a RoaringBitmapArray: 64-bit row positions as
32-bit roaring bitmaps (their portable serialization) keyed by the positions' high halves. Only reading is
needed here, in the standard library: no roaring package to install on the harness's host.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Callable, Iterator
from urllib.parse import unquote, urlparse

from harness.errors import BadInput

MAGIC = 1681511377  # the serialized vector's first four bytes, little-endian
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
Z85_VALUE = {character: value for value, character in enumerate(Z85)}
RUN_COOKIE, PLAIN_COOKIE = 12347, 12346  # a portable roaring bitmap with run containers, without
NO_OFFSETS_BELOW = 4  # containers under which a bitmap with runs has no offset header
ARRAY_MAX = 4096  # a container with more values is a bitmap of 2^16 bits


def z85_decode(text: str) -> bytes:
    """Z85 (ZeroMQ's base 85): five characters, four bytes, big-endian."""
    if len(text) % 5:
        raise ValueError(f"Z85 text of {len(text)} characters, not a multiple of 5")
    out = bytearray()
    for start in range(0, len(text), 5):
        value = 0
        for character in text[start:start + 5]:
            value = value * 85 + Z85_VALUE[character]
        out += value.to_bytes(4, "big")
    return bytes(out)


def vector_path(table: str, descriptor: dict) -> str:
    """Where a stored vector's file is: `u` a random prefix, then the file's UUID in 20 Z85 characters;
    `p` a path (or file: URI) of its own."""
    text = descriptor["pathOrInlineDv"]
    if descriptor["storageType"] == "u":
        prefix, encoded = text[:-20], text[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{table}/{prefix}/{name}" if prefix else f"{table}/{name}"
    parsed = urlparse(text)
    if parsed.scheme not in ("file", ""):
        raise BadInput(f"Delta table {table}: deletion vector {text} is not on the run's volume")
    return unquote(parsed.path)


def serialized(table: str, descriptor: dict, read_bytes: Callable[[str], bytes]) -> bytes:
    """The vector's bytes (magic number and bitmaps): inline, or at its offset in its file (a 4-byte
    big-endian size, the bytes, their CRC-32), checked."""
    size = int(descriptor["sizeInBytes"])
    if descriptor["storageType"] == "i":
        return z85_decode(descriptor["pathOrInlineDv"])[:size]
    if descriptor["storageType"] not in ("u", "p"):
        raise BadInput(f"Delta table {table}: deletion vector storage type {descriptor['storageType']!r} unknown")
    path = vector_path(table, descriptor)
    data = read_bytes(path)
    offset = int(descriptor.get("offset") or 0)
    (stored,) = struct.unpack_from(">i", data, offset)
    body = data[offset + 4:offset + 4 + size]
    (crc,) = struct.unpack_from(">I", data, offset + 4 + size)
    if stored != size or zlib.crc32(body) != crc:
        raise BadInput(f"Delta table {table}: deletion vector at {path}+{offset} is damaged (size {stored} for "
                       f"{size}, or its checksum differs)")
    return body


def positions(data: bytes) -> set[int]:
    """The row positions a serialized vector holds."""
    (magic,) = struct.unpack_from("<i", data, 0)
    if magic != MAGIC:
        raise ValueError(f"not a deletion vector (magic {magic})")
    (bitmaps,) = struct.unpack_from("<q", data, 4)
    found: set[int] = set()
    at = 12
    for _ in range(bitmaps):
        (high,) = struct.unpack_from("<I", data, at)
        values, at = _roaring(data, at + 4)
        found.update((high << 32) | value for value in values)
    return found


def _roaring(data: bytes, at: int) -> tuple[Iterator[int], int]:
    """A 32-bit roaring bitmap in its portable serialization at `at`: its values and where it ends."""
    (cookie,) = struct.unpack_from("<I", data, at)
    at += 4
    if cookie & 0xFFFF == RUN_COOKIE:
        count = (cookie >> 16) + 1
        run_flags = data[at:at + (count + 7) // 8]
        at += (count + 7) // 8
    elif cookie == PLAIN_COOKIE:
        (count,) = struct.unpack_from("<I", data, at)
        at += 4
        run_flags = bytes((count + 7) // 8)
    else:
        raise ValueError(f"not a portable roaring bitmap (cookie {cookie})")
    headers = [struct.unpack_from("<HH", data, at + 4 * i) for i in range(count)]  # key, cardinality - 1
    at += 4 * count
    if cookie == PLAIN_COOKIE or count >= NO_OFFSETS_BELOW:
        at += 4 * count  # each container's offset: they follow one another anyway
    values: list[int] = []
    for index, (key, cardinality) in enumerate(headers):
        base = key << 16
        if run_flags[index // 8] >> (index % 8) & 1:
            (runs,) = struct.unpack_from("<H", data, at)
            pairs = struct.unpack_from(f"<{2 * runs}H", data, at + 2)
            at += 2 + 4 * runs
            for start, length in zip(pairs[::2], pairs[1::2], strict=True):
                values.extend(range(base + start, base + start + length + 1))
        elif cardinality + 1 <= ARRAY_MAX:
            values.extend(base + low for low in struct.unpack_from(f"<{cardinality + 1}H", data, at))
            at += 2 * (cardinality + 1)
        else:
            words = struct.unpack_from("<1024Q", data, at)
            at += 8192
            for word_index, word in enumerate(words):
                while word:
                    lowest = word & -word
                    values.append(base + word_index * 64 + lowest.bit_length() - 1)
                    word ^= lowest
    return iter(values), at
