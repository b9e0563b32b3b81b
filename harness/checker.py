"""The exactly-once checker: compares the output multiset with the expected one and names anomalies.

Pure logic, no I/O: the input is what the reader read and what the model expects.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field

from harness.reader import OutputRecord

EXAMPLES = 20

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"
NONE = "none"

PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"


@dataclass
class Anomaly:
    """One kind of anomaly: how many, and a few examples with where they sit."""

    name: str
    count: int = 0
    examples: list[dict] = field(default_factory=list)

    def add(self, example: dict, weight: int = 1) -> None:
        self.count += weight
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)


@dataclass
class Verdict:
    """The outcome of a check: pass, fail (with anomalies) or unknown (the check itself failed)."""

    outcome: str
    guarantee: str
    anomalies: dict[str, Anomaly]
    expected: int
    observed: int
    distinct: int
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        found = ", ".join(f"{a.name}={a.count}" for a in self.anomalies.values()) or "none"
        return (
            f"{self.outcome.upper()}: observed {self.guarantee}; expected {self.expected}, "
            f"read {self.observed} ({self.distinct} distinct); anomalies: {found}"
        )


def classify(anomalies: Mapping[str, Anomaly]) -> str:
    """The observed guarantee from the anomalies that were found."""
    duplicated = "duplicate" in anomalies
    lost = "lost" in anomalies
    if "unexpected" in anomalies or (duplicated and lost):
        return NONE
    if duplicated:
        return AT_LEAST_ONCE
    if lost:
        return AT_MOST_ONCE
    return EXACTLY_ONCE


def json_identity(field_name: str = "id") -> Callable[[OutputRecord], str]:
    """Identity of an output record: a field of its JSON value."""

    def identity(record: OutputRecord) -> str:
        return str(json.loads(record.value)[field_name])

    return identity


def _where(record: OutputRecord) -> dict:
    return {"partition": record.partition, "offset": record.offset}


class ExactlyOnceChecker:
    """Every expected identity exactly once, nothing else."""

    def __init__(self, identity: Callable[[OutputRecord], str] = json_identity()) -> None:
        self.identity = identity

    def check(self, expected: Iterable[str], output: list[OutputRecord]) -> Verdict:
        expected_ids = set(expected)
        anomalies: dict[str, Anomaly] = {}
        try:
            counts: Counter[str] = Counter()
            first: dict[str, OutputRecord] = {}
            for record in output:
                identity = self.identity(record)
                counts[identity] += 1
                first.setdefault(identity, record)
                if counts[identity] == 2:
                    anomalies.setdefault("duplicate", Anomaly("duplicate"))
            for identity, count in counts.items():
                if count > 1:
                    anomalies["duplicate"].add({"id": identity, "count": count, **_where(first[identity])}, count - 1)
                if identity not in expected_ids:
                    anomalies.setdefault("unexpected", Anomaly("unexpected")).add(
                        {"id": identity, **_where(first[identity])}, count
                    )
            for identity in sorted(expected_ids - counts.keys()):
                anomalies.setdefault("lost", Anomaly("lost")).add({"id": identity})
        except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
            return Verdict(UNKNOWN, NONE, anomalies, len(expected_ids), len(output), 0, repr(error))
        outcome = FAIL if anomalies else PASS
        return Verdict(outcome, classify(anomalies), anomalies, len(expected_ids), len(output), len(counts))
