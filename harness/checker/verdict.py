"""Anomalies, the verdict, and the observed guarantee derived from the anomalies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

EXAMPLES = 20

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"
NONE = "none"

PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"


class Expected(NamedTuple):
    """What the model expects of one output identity: its key and its place in the key's order."""

    key: str
    seq: int


@dataclass
class Anomaly:
    """One kind of anomaly: how many, and up to 20 examples with where they sit."""

    name: str
    count: int = 0
    examples: list[dict] = field(default_factory=list)

    def add(self, example: dict, weight: int = 1) -> None:
        self.count += weight
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)


@dataclass
class Verdict:
    """pass, fail (with anomalies) or unknown (a checker or the harness failed: never a pass)."""

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
        text = (
            f"{self.outcome.upper()}: observed {self.guarantee}; expected {self.expected}, "
            f"read {self.observed} ({self.distinct} distinct); anomalies: {found}"
        )
        return text + (f"; error: {self.error}" if self.error else "")


def classify(anomalies: Mapping[str, Anomaly]) -> str:
    """The observed guarantee: duplicates only is at-least-once, losses only at-most-once."""
    duplicated = "duplicate" in anomalies
    lost = "lost" in anomalies
    if "unexpected" in anomalies or (duplicated and lost):
        return NONE
    if duplicated:
        return AT_LEAST_ONCE
    if lost:
        return AT_MOST_ONCE
    return EXACTLY_ONCE
