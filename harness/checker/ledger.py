"""The expected identities, checked off one by one as the output is read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from itertools import repeat
from operator import attrgetter, methodcaller

from confluent_kafka import Message

from harness.checker.verdict import Anomaly, Expected
from harness.client.records import Record, Records

SHOWN_BYTES = 64  # of an unreadable record's value, in its example
VALUE = methodcaller("value")  # of a record: a Message's or an OutputRecord's, called from C
PARTITION = methodcaller("partition")
REQUIRED = attrgetter("required")
REREAD = 10_000  # records whose identities are read again at once
COMPACT = 4  # the remaining model is copied when 1/COMPACT of it is left


class Ledger:
    """What is still expected, what came more than once or was never expected, and every record read.

    Checking off is one dictionary pop per record, done in C through `map`, batch by batch on the
    reader's batch thread while the consumer waits for the broker; only anomalies cost Python loops.

    A result whose absence is a loss is `required` by the model (Expected.required); in an incomplete
    run only those of input the checkpoint says was consumed (`required`, when given): the output may
    hold results of input past the checkpoint, which are expected but not required.
    A record whose identity cannot be read is `unreadable`: the sink's anomaly, kept out of the
    checkers' way, never a crash of the verdict. `identities` is the pipeline's batch form of
    `identity`, when it has one (faster); a batch it refuses is sorted out record by record.
    """

    def __init__(
        self,
        expected: Mapping[str, Expected],
        identity: Callable[[bytes], str],
        required: Collection[str] | None = None,
        identities: Callable[[list[bytes]], list[str]] | None = None,
    ) -> None:
        self.expected = expected
        self.identity = identity
        self.batch_identities = identities or (lambda values: list(map(identity, values)))
        self.required = required
        self.remaining: dict[str, Expected] = dict(expected)
        self._compact_below = len(self.remaining) // COMPACT
        self.extra: Counter[str] = Counter()  # identities read when not (or no longer) remaining
        self.unreadable = Anomaly("unreadable")
        self.records = Records()  # every readable record, in read order

    def add(self, batch: list[Record]) -> tuple[list[Record], list[str], list[Expected | None]]:
        """Check a batch off; return its readable records, their identities and, for first occurrences,
        what the model expects."""
        values = values_of(batch)
        try:
            identities = self.batch_identities(values)
            if None in values or not set(map(type, identities)) <= {str}:
                raise TypeError("a tombstone, or an identity that is not a string")
        except Exception:  # noqa: BLE001 - some record is not the pipeline's: sort them out one by one
            batch, identities = self._readable(batch)
        wants: list[Expected | None] = list(map(self.remaining.pop, identities, repeat(None)))
        if None in wants:
            self.extra.update(identity for identity, want in zip(identities, wants, strict=True) if want is None)
        self.records.extend(batch)
        if len(self.remaining) < self._compact_below:
            self._compact()
        return batch, identities, wants

    def _compact(self) -> None:
        """A dict keeps its size when entries are popped: copied when three quarters are gone, what is
        checked off gives its memory to the records read meanwhile (40 MB at a million). Copying at each
        half copied as many entries as the model has; at each quarter, a third of them, and the memory
        is given back well before the read's end, where its peak is."""
        self.remaining = dict(self.remaining)
        self._compact_below = len(self.remaining) // COMPACT

    def _readable(self, batch: list[Record]) -> tuple[list[Record], list[str]]:
        readable: list[Record] = []
        identities: list[str] = []
        for record in batch:
            value = record.value()
            try:
                if value is None:
                    raise TypeError("no value: a tombstone")
                identity = self.identity(value)
                if not isinstance(identity, str):
                    raise TypeError(f"identity is {type(identity).__name__}, not str")
            except Exception as error:  # noqa: BLE001 - whatever the identity function raises names the record
                self.unreadable.add({
                    "partition": record.partition(), "offset": record.offset(),
                    "value": None if value is None else shown(value),
                    "bytes": None if value is None else len(value),
                    "reason": f"{error.__class__.__name__}: {error}",
                })
                continue
            readable.append(record)
            identities.append(identity)
        return readable, identities

    def identities(self) -> Iterator[str]:
        """Each readable record's identity, in read order, read again: only anomalies to locate and live
        latency need them after the read, so a million identity strings are not kept through it."""
        every = self.records.values
        for start in range(0, len(every), REREAD):
            values = every[start:start + REREAD]
            try:
                yield from self.batch_identities(values)
            except Exception:  # noqa: BLE001 - the batch form refuses what the record form reads
                yield from map(self.identity, values)

    def duplicates(self) -> dict[str, int]:
        """Expected identities read more than once, with how many times."""
        return {i: n + 1 for i, n in self.extra.items() if i in self.expected}

    def unexpected(self) -> dict[str, int]:
        """Identities the model never expected, with how many times they were read."""
        return {i: n for i, n in self.extra.items() if i not in self.expected}

    def lost(self) -> list[str]:
        """Required identities never read."""
        return sorted(i for i, want in self.remaining.items() if want.required and self._reached(i))

    def unreached(self) -> int:
        """Results the model requires that were never read, of input the pipeline did not consume."""
        return sum(want.required and not self._reached(i) for i, want in self.remaining.items())

    def _reached(self, identity: str) -> bool:
        return self.required is None or identity in self.required

    @property
    def required_count(self) -> int:
        """How many results the model requires (all but a changelog's intermediate updates)."""
        return sum(map(REQUIRED, self.expected.values()))

    @property
    def distinct(self) -> int:
        return len(self.expected) - len(self.remaining) + len(self.unexpected())


def values_of(records: list[Record] | Records) -> list[bytes]:
    """Each record's value. A topic's records are Messages, whose own method is called from C about
    three times faster than through `methodcaller`; a table's come as `Records`, whose column is taken as
    it is; records made by hand take the general way."""
    if isinstance(records, Records):
        return records.values
    try:
        return list(map(Message.value, records))
    except TypeError:  # some record is not a Message
        return list(map(VALUE, records))


def partitions_of(records: list[Record] | Records) -> list[int]:
    """Each record's partition, the same way as `values_of`."""
    if isinstance(records, Records):
        return records.partitions.tolist()
    try:
        return list(map(Message.partition, records))
    except TypeError:
        return list(map(PARTITION, records))


def shown(value: bytes) -> str:
    """The first bytes, escaped: what a reader of the report needs to recognise the record."""
    text = value[:SHOWN_BYTES].decode("ascii", "backslashreplace")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text + ("..." if len(value) > SHOWN_BYTES else "")
