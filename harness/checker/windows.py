"""Results that carry a value (a window's count): each expected result once, with the model's value.

`duplicate` (a result again, with the same value), `divergent` (again, with another value: a replay
that saw other input or state, worse than a plain duplicate), `wrong_value` (the first occurrence
with another value than the model's: low means input or state lost, high means input applied twice),
`lost` and `unexpected` (from the ledger, as for every output). After Flink's
EventTimeWindowCheckpointingITCase, which checks every window's sum.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.checker.exactly_once import ExactlyOnceChecker
from harness.checker.ledger import Ledger
from harness.checker.verdict import Anomaly, Expected
from harness.reader import Record


class WindowsChecker:
    """`value(record bytes)` reads a result's value; the model's `Expected.value` is what it must be.

    Which copy of a repeated result is read first depends on how the reader interleaves partitions,
    so occurrences are judged together at the end: when one of them has the model's value, the others
    are `duplicate` (the same value) or `divergent` (another); when none has, the result is a
    `wrong_value` and the others are judged against the first read.
    The pipeline's identity function has already validated every record it identified, so reading
    the value of a readable record does not fail.
    """

    def __init__(self, value: Callable[[bytes], object]) -> None:
        self.value = value
        self.first: dict[str, tuple[object, int, int]] = {}  # identity -> value, partition, offset
        self.repeats: list[tuple[str, object, int, int]] = []  # identity, value, partition, offset

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        self._feed_values(records, [self.value(record.value()) for record in records], identities, wants)

    def _feed_values(self, records: list[Record], values: list[object], identities: list[str],
                     wants: list[Expected | None]) -> None:
        for record, value, identity, want in zip(records, values, identities, wants, strict=True):
            seen = (value, record.partition(), record.offset())
            if want is None:  # a repeat, or a result the model does not have: told apart at the end
                self.repeats.append((identity, *seen))
            else:
                self.first[identity] = seen

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies = ExactlyOnceChecker().anomalies(ledger)
        anomalies.pop("duplicate", None)  # told apart from `divergent` here, by value
        again: dict[str, list[tuple[object, int, int]]] = {}
        for identity, *seen in self.repeats:
            if identity in self.first:  # else unexpected: the ledger's
                again.setdefault(identity, []).append(tuple(seen))  # type: ignore[arg-type]

        def add(name: str, example: dict) -> None:
            anomalies.setdefault(name, Anomaly(name)).add(example)

        for identity, first in self.first.items():
            expected = ledger.expected[identity].value
            occurrences = [first, *again.get(identity, [])]
            right = next((o for o in occurrences if o[0] == expected), None)
            if right is None:
                right = first
                add("wrong_value", {"id": identity, "expected": expected, "got": first[0],
                                    "partition": first[1], "offset": first[2]})
            for other in occurrences:
                if other is not right:
                    add("duplicate" if other[0] == right[0] else "divergent",
                        {"id": identity, "value": right[0], "again": other[0], "partition": other[1],
                         "offset": other[2]})
        return anomalies
