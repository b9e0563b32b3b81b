"""What a Parquet file's pages say of themselves, read from their headers before any page is decompressed:
each page's uncompressed size and encoding. pyarrow has no page-level API, and a page's header is the only
place its encoding and its decompressed size are written (a column chunk's metadata sums them, and the
sink that wrote the file could write anything there). The headers are Thrift's compact protocol, read here
as the Parquet format defines them; anything unexpected is a ValueError (the table is corrupt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.parquet as pq

DICTIONARY_PAGE = 2
DATA_PAGES = (0, 3)  # DATA_PAGE, DATA_PAGE_V2
PLAIN, DELTA_LENGTH_BYTE_ARRAY = 0, 6
# encodings whose values decode to no more bytes than the page holds (a length and the bytes, per value)
NOT_EXPANDING = (PLAIN, DELTA_LENGTH_BYTE_ARRAY)
MAX_DEPTH = 16  # nested structs in a header: statistics hold a few levels, never this many


@dataclass(frozen=True)
class Page:
    kind: int  # the page type
    uncompressed: int  # bytes, as the header says: what its decompression makes
    encoding: int | None  # a data page's values' encoding (None for other pages)


@dataclass(frozen=True)
class Chunk:
    """One column chunk's pages: what they decompress to, and how their values are encoded."""

    pages: tuple[Page, ...]

    @property
    def uncompressed(self) -> int:
        return sum(page.uncompressed for page in self.pages)

    @property
    def encodings(self) -> set[int]:
        return {page.encoding for page in self.pages if page.encoding is not None}

    @property
    def not_expanding(self) -> bool:
        """Every data page decodes to at most its own bytes: no dictionary or prefix makes one value many."""
        return self.encodings <= set(NOT_EXPANDING)


class _Compact:
    """Thrift's compact protocol, read from bytes: what a page header needs, and skipping the rest."""

    def __init__(self, data: bytes, at: int, end: int) -> None:
        self.data, self.at, self.end = data, at, end

    def byte(self) -> int:
        if self.at >= self.end:
            raise ValueError("a page header runs past its column chunk")
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = result = 0
        while shift <= 63:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise ValueError("a page header's integer runs past 64 bits")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def struct(self, nested: frozenset[int] = frozenset(), depth: int = 0) -> dict[int, object]:
        """A struct's integer fields by id, and its struct fields whose ids are in `nested` read the same way
        (their integer fields); every other field skipped."""
        if depth > MAX_DEPTH:
            raise ValueError("a page header nests too deep")
        fields: dict[int, object] = {}
        field = 0
        while (header := self.byte()) != 0:
            kind, delta = header & 0x0F, header >> 4
            field = field + delta if delta else self.zigzag()
            if field in nested and kind == 12:
                fields[field] = self.struct(frozenset(), depth + 1)
            elif kind in (4, 5, 6):
                fields[field] = self.zigzag()
            else:
                self.skip(kind, depth)
        return fields

    def skip(self, kind: int, depth: int) -> None:
        if kind in (1, 2):  # a boolean, in its type
            return
        if kind == 3:
            self.byte()
        elif kind == 7:
            self.take(8)
        elif kind == 8:
            self.take(self.varint())
        elif kind in (9, 10):
            header = self.byte()
            size = header >> 4 if header >> 4 != 15 else self.varint()
            for _ in range(size):
                self.skip(header & 0x0F, depth + 1)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1)
                self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct(frozenset(), depth + 1)
        else:
            raise ValueError(f"a page header holds a field of unknown type {kind}")

    def take(self, size: int) -> None:
        if size < 0 or self.at + size > self.end:
            raise ValueError("a page header's field runs past its column chunk")
        self.at += size


# PageHeader's fields: 1 type, 2 uncompressed_page_size, 3 compressed_page_size; its data page header (5),
# dictionary page header (7) and v2 data page header (8) each give their encoding (field 2, 2 and 4)
ENCODING_FIELD = {5: 2, 7: 2, 8: 4}


def chunk_pages(data: bytes, column: pq.ColumnChunkMetaData) -> Chunk:
    """The pages of one column chunk of the file `data`, from their headers, over the bytes its metadata
    gives it (each page's compressed bytes skipped, never read)."""
    start = column.dictionary_page_offset if column.has_dictionary_page else column.data_page_offset
    end = start + column.total_compressed_size
    if start < 0 or end > len(data) or start > end:
        raise ValueError(f"a column chunk's bytes {start}..{end} lie outside the file's {len(data)}")
    pages = []
    at = start
    while at < end:
        reader = _Compact(data, at, end)
        header = reader.struct(frozenset(ENCODING_FIELD))
        kind, uncompressed, compressed = (header.get(field) for field in (1, 2, 3))
        if not isinstance(kind, int) or not isinstance(uncompressed, int) or not isinstance(compressed, int) \
                or uncompressed < 0 or compressed < 0:
            raise ValueError(f"a page header at byte {at} lacks its type or sizes")
        encoding = next((sub.get(ENCODING_FIELD[field]) for field, sub in header.items()
                         if field in ENCODING_FIELD and isinstance(sub, dict)), None)
        if kind in DATA_PAGES and not isinstance(encoding, int):
            encoding = -1  # a data page that names no encoding: not one known not to expand
        pages.append(Page(kind, uncompressed, encoding if kind in DATA_PAGES else None))  # type: ignore[arg-type]
        at = reader.at + compressed
    return Chunk(tuple(pages))
