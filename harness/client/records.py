"""What a record read from Kafka is, and how a read keeps a million of them.

A checker sees each batch as the Messages confluent-kafka made (their methods are C, the fastest way
through a batch). What is kept after the batch, for the anomalies' places, the report and the
differential oracle, is `Records`: a column per field. A Message costs about 136 bytes and its own copy
of the topic's name about 80 more; a column costs 36 bytes a record, and the value and key are the very
bytes objects the Message held.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from operator import itemgetter, methodcaller
from typing import Protocol, overload

from confluent_kafka import TIMESTAMP_CREATE_TIME, Message

from harness.client.workload import SEQUENCE_HEADER


class Record(Protocol):
    """One record as read: a confluent-kafka Message, an `OutputRecord` made by hand or one of `Records`."""

    def partition(self) -> int: ...

    def offset(self) -> int: ...

    def key(self) -> bytes | None: ...

    def value(self) -> bytes: ...

    def timestamp(self) -> tuple[int, int]: ...

    def headers(self) -> list[tuple[str, bytes]] | None: ...


class OutputRecord(tuple):
    """A record made by hand (unit tests, crafted outputs) or taken out of `Records`, with a Message's methods."""

    __slots__ = ()

    def __new__(cls, partition: int, offset: int, key: bytes | None, value: bytes, timestamp: int = 0,
                headers: list[tuple[str, bytes]] | None = None) -> OutputRecord:
        return tuple.__new__(cls, (partition, offset, key, value, timestamp, headers))

    def partition(self) -> int:
        return self[0]

    def offset(self) -> int:
        return self[1]

    def key(self) -> bytes | None:
        return self[2]

    def value(self) -> bytes:
        return self[3]

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, self[4]

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self[5]


SECOND = itemgetter(1)
FIELDS = ("partition", "offset", "key", "value", "timestamp", "headers")
BY_METHOD = {name: methodcaller(name) for name in FIELDS}
BY_MESSAGE = {name: getattr(Message, name) for name in FIELDS}  # unbound C methods: about 3x faster


class Records(Sequence[Record]):
    """Records in read order, a column per field. Indexing or iterating gives `OutputRecord`s; code that
    walks every record reads the columns (`values`, `keys`, `timestamps`, ...) instead."""

    __slots__ = ("partitions", "offsets", "keys", "values", "timestamps", "headers")

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self.partitions = array("i")
        self.offsets = array("q")
        self.timestamps = array("q")
        self.keys: list[bytes | None] = []
        self.values: list[bytes] = []
        self.headers: list[list[tuple[str, bytes]] | None] = []
        self.extend(records)

    @classmethod
    def run(cls, partition: int, first_offset: int, keys: list[bytes | None], values: list[bytes],
            timestamp: int = 0) -> Records:
        """A run of one partition's records at consecutive offsets, from columns (a table's rows, as a
        reader decodes them): no object made for each record, the columns taken as they are."""
        run = cls()
        count = len(values)
        run.partitions = array("i", [partition]) * count
        run.offsets = array("q", range(first_offset, first_offset + count))
        run.timestamps = array("q", [timestamp]) * count
        run.keys, run.values, run.headers = keys, values, [None] * count
        return run

    @classmethod
    def of(cls, records: Iterable[Record]) -> Records:
        """These records as `Records`, without a copy when they are already."""
        return records if isinstance(records, Records) else cls(records)

    def extend(self, records: Iterable[Record]) -> None:
        """Append a batch: Messages through their C methods, anything else through its own."""
        if isinstance(records, Records):
            for name in self.__slots__:
                getattr(self, name).extend(getattr(records, name))
            return
        batch = records if isinstance(records, list) else list(records)
        if not batch:
            return
        field = BY_MESSAGE if set(map(type, batch)) == {Message} else BY_METHOD
        self.partitions.extend(map(field["partition"], batch))
        self.offsets.extend(map(field["offset"], batch))
        self.timestamps.extend(map(SECOND, map(field["timestamp"], batch)))
        self.keys.extend(map(field["key"], batch))
        self.values.extend(map(field["value"], batch))
        headers = list(map(field["headers"], batch))
        self.headers.extend(headers if any(headers) else repeat(None, len(batch)))

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> OutputRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Records: ...

    def __getitem__(self, index: int | slice) -> OutputRecord | Records:
        if isinstance(index, slice):
            part = Records()
            for name in self.__slots__:
                getattr(part, name).extend(getattr(self, name)[index])
            return part
        return OutputRecord(self.partitions[index], self.offsets[index], self.keys[index], self.values[index],
                            self.timestamps[index], self.headers[index])

    def __iter__(self) -> Iterator[OutputRecord]:
        return map(OutputRecord, self.partitions, self.offsets, self.keys, self.values, self.timestamps, self.headers)

    def __repr__(self) -> str:
        return f"Records({len(self)} records)"


def as_bytes(column: Sequence[str | bytes | None]) -> list[bytes | None]:
    """A string or binary column's cells as bytes (None stays None): a table's rows, made records."""
    try:
        return list(map(str.encode, column))  # a string column without nulls: each cell encoded in C
    except TypeError:
        return [cell.encode() if isinstance(cell, str) else cell for cell in column]


def in_produce_order(records: Sequence[Record]) -> list[Record]:
    """Records of several partitions in the order they were produced: a model that follows event time
    through its input needs that order, not the reader's interleaving.

    The harness's producer numbers its records (`SEQUENCE_HEADER`), which is exact. A topic written by
    anyone else falls back to create timestamps, then partition and offset: records of one millisecond
    on different partitions have no known order there, only a repeatable one."""
    sequence = [_sequence(record) for record in records]
    if None not in sequence:
        return [records[i] for i in sorted(range(len(records)), key=sequence.__getitem__)]
    return sorted(records, key=lambda record: (record.timestamp()[1], record.partition(), record.offset()))


def _sequence(record: Record) -> int | None:
    """The record's place in the produce order, when the harness's producer wrote it."""
    for name, value in record.headers() or ():
        if name == SEQUENCE_HEADER:
            return int(value)
    return None
