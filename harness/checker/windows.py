"""Results that carry a value (a window's count): each expected result once, with the model's value.

`duplicate` (a result again, with the same value), `divergent` (again, with another value: a replay
that saw other input or state, worse than a plain duplicate), `wrong_value` (the first occurrence
with another value than the model's: low means input or state lost, high means input applied twice),
`lost` and `unexpected` (from the ledger, as for every output). After Flink's
EventTimeWindowCheckpointingITCase, which checks every window's sum.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from operator import attrgetter, ne

from harness.checker.exactly_once import ExactlyOnceChecker
from harness.checker.ledger import Ledger, values_of
from harness.checker.verdict import Anomaly, Expected
from harness.client.records import Record

EXPECTED_VALUE = attrgetter("value")


class ValueComparison:
    """Each expected result once, with the model's value: the comparing shared by the checkers of
    results that carry a value (windows, changelog updates), fed values already read.

    Which copy of a repeated result is read first depends on how the reader interleaves partitions,
    so occurrences are judged together at the end: when one of them has the model's value, the others
    are `duplicate` (the same value) or `divergent` (another); when none has, the result is a
    `wrong_value` and the others are judged against the first read.
    A million results are checked by C loops (`map`, `compress`): a first occurrence is compared with
    the model as it is read, and only those that differ, the repeats and the anomalies cost Python; a
    first occurrence that is not kept had the model's value.
    """

    def __init__(self) -> None:
        self.wrong: dict[str, object] = {}  # identity -> the value of its first occurrence, not the model's
        self.repeats: list[tuple[str, object, int, int]] = []  # identity, value, partition, offset

    def feed(self, records: list[Record], values: list[object], identities: list[str],
             wants: list[Expected | None]) -> None:
        if None in wants:  # a repeat, or a result the model does not have: told apart at the end
            firsts = list(map(bool, wants))  # an Expected is a non-empty tuple
            for record, value, identity, first in zip(records, values, identities, firsts, strict=True):
                if not first:
                    self.repeats.append((identity, value, record.partition(), record.offset()))
            identities, values, wants = (list(compress(column, firsts)) for column in (identities, values, wants))
        model = list(map(EXPECTED_VALUE, wants))  # type: ignore[arg-type]
        if values != model:  # one comparison in C when every value is the model's
            self.wrong.update(compress(zip(identities, values, strict=True), map(ne, values, model)))

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies = ExactlyOnceChecker().anomalies(ledger)
        anomalies.pop("duplicate", None)  # told apart from `divergent` here, by value
        again: dict[str, list[tuple[object, int, int]]] = {}
        for identity, *seen in self.repeats:
            if identity in ledger.expected:  # else unexpected: the ledger's
                again.setdefault(identity, []).append(tuple(seen))  # type: ignore[arg-type]

        def add(name: str, example: dict) -> None:
            anomalies.setdefault(name, Anomaly(name)).add(example)

        suspects = self.wrong.keys() | again.keys()  # every other result was read once, with its value
        for identity, record in (_first_records(ledger, suspects) if suspects else {}).items():
            expected = ledger.expected[identity].value
            first = (self.wrong.get(identity, expected), record.partition(), record.offset())
            occurrences = [first, *again.get(identity, [])]
            right = next((o for o in occurrences if o[0] == expected), None)
            if right is None:
                right = first
                add("wrong_value", {"id": identity, "expected": expected, "got": right[0],
                                    "partition": right[1], "offset": right[2]})
            for other in occurrences:
                if other is not right:
                    add("duplicate" if other[0] == right[0] else "divergent",
                        {"id": identity, "value": right[0], "again": other[0], "partition": other[1],
                         "offset": other[2]})
        return anomalies


class WindowsChecker:
    """`values(record values)` reads a batch of results' values (the pipeline's batch reader); the
    model's `Expected.value` is what each must be. The pipeline's identity function has already
    validated every record it identified, so reading the value of a readable record does not fail."""

    def __init__(self, values: Callable[[list[bytes]], list]) -> None:
        self.values = values
        self.comparison = ValueComparison()

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        self.comparison.feed(records, self.values(values_of(records)), identities, wants)

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        return self.comparison.anomalies(ledger)


def _first_records(ledger: Ledger, identities: set[str]) -> dict[str, Record]:
    """Where each of these identities was first read, in read order: a walk over the read, only when
    anomalies need it."""
    found: dict[str, Record] = {}
    for identity, record in zip(ledger.identities(), ledger.records, strict=True):
        if identity in identities and identity not in found:
            found[identity] = record
    return found
