"""Anomalies, the verdict, and the observed guarantee derived from the anomalies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

EXAMPLES = 20

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"
EFFECTIVELY_ONCE = "effectively-once"  # a changelog's identical repeats only: right for a reader that upserts
NONE = "none"
UNDECIDED = "unknown"  # an incomplete run without evidence either way: no guarantee can be named

PASS = "pass"
FAIL = "fail"
UNKNOWN = "unknown"


# What each anomaly means, shown beside it in reports.
MEANINGS = {
    "duplicate": "an expected result read more than once",
    "lost": "an expected result never read (only for input the pipeline consumed: see incomplete)",
    "unexpected": "a result the model does not have",
    "unreadable": "a record the pipeline's output cannot be (not its format, empty, truncated, a tombstone)",
    "reordered": "a key's results out of sequence within one output partition "
                 "(Kafka orders nothing across partitions, so no order is checked across them; a table keeps no "
                 "row order, so no table output is checked for it)",
    "stuck": "a transaction left open: the last stable offset stays below the high watermark",
    "incomplete": "the input was not consumed: results past what the checkpoint consumed are not counted as lost",
    "vacuous": "a fault never fired",
    "regression": "a key's value lower than one already emitted in its partition: a replayed or zombie "
                  "write landing after a newer one (an upserting reader goes back in time)",
    "divergent": "an expected result read again with another value: a replay that saw other input or state",
    "wrong_value": "an expected result whose value is not the model's (low: input or state lost; "
                   "high: input applied twice)",
    "crash_loop": "the query kept failing on its own: every restart the supervisor allowed failed again "
                  "(the exceptions are the examples)",
    "query_failed": "the query failed on its own and restarts are off (no supervisor): the output stops there",
    "table_corrupt": "the committed table cannot be read: a file its snapshot or its catalog names is not there "
                     "(the missing file and the fault before it are the example)",
    "file_rewritten": "a data file the committed table names holds another number of rows than its commit "
                      "recorded: it was written again after the commit, and the table's snapshot no longer describes "
                      "its files (the file, its table version and both counts are the example)",
    "rewrite_changed_rows": "a commit the table's format records as only moving rows (a compaction, OPTIMIZE, "
                            "clustering) left the table with other rows than it found: the commit, the rows it "
                            "dropped and those it added are the example",
    "batch_committed_twice": "the output store's own history holds one streaming batch in two commits (two "
                             "table versions, two transactions): a replay committed again, even where a key or an "
                             "upsert hides the duplicate rows; for a state table, only a later commit that changed "
                             "rows an earlier one wrote (one that changed none is an idempotent repeat)",
}


class Expected(NamedTuple):
    """What the model expects of one output identity: its key, its place in the key's order, for
    results that carry one (a window's count) its value, and whether its absence is a loss (a
    changelog's intermediate updates may or may not be emitted; its final ones must be)."""

    key: str
    seq: int
    value: object = None
    required: bool = True


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
    oracle: str = "model"  # what decided: the pipeline's model, or a fault-free run's output (differential)

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        found = ", ".join(f"{a.name}={a.count}" for a in self.anomalies.values()) or "none"
        text = (
            f"{self.outcome.upper()}: observed {self.guarantee}; expected {self.expected}, "
            f"read {self.observed} ({self.distinct} distinct); anomalies: {found}"
        )
        text += f"; oracle: {self.oracle}" if self.oracle != "model" else ""
        return text + (f"; error: {self.error}" if self.error else "")


def classify(anomalies: Mapping[str, Anomaly], changelog: bool = False) -> str:
    """The observed guarantee: duplicates only is at-least-once, losses only at-most-once. In a
    changelog (read by upserting each key), identical repeats with no regression are effectively-once:
    right for a reader that upserts by key, wrong for one that counts updates; a regression (an older
    value landing after a newer one) makes them at-least-once.

    A record that is not a result (`unexpected`, `unreadable`), a result with another value than the
    model's (`divergent`, `wrong_value`), a committed file changed under its table (`file_rewritten`) or a
    rewrite that changed rows (`rewrite_changed_rows`) breaks every guarantee; an incomplete
    run with nothing else wrong names none (it is undecided, not at-most-once).
    """
    duplicated = "duplicate" in anomalies or "batch_committed_twice" in anomalies
    lost = "lost" in anomalies
    if any(name in anomalies for name in ("unexpected", "unreadable", "divergent", "wrong_value",
                                          "file_rewritten", "rewrite_changed_rows")) or (
        duplicated and lost
    ):
        return NONE
    if duplicated or "regression" in anomalies:
        return EFFECTIVELY_ONCE if changelog and set(anomalies) == {"duplicate"} else AT_LEAST_ONCE
    if lost:
        return AT_MOST_ONCE
    if "incomplete" in anomalies:
        return UNDECIDED
    return EXACTLY_ONCE


def with_anomaly(verdict: Verdict, anomaly: Anomaly | None) -> Verdict:
    """The verdict with one more anomaly found beside the checkers' (the store's history, a rewrite, a file
    written again): a fail on its evidence, its guarantee named again (a crashed checker stays unknown)."""
    if anomaly is None:
        return verdict
    anomalies = {**verdict.anomalies, anomaly.name: anomaly}
    crashed = verdict.outcome == UNKNOWN and "incomplete" not in verdict.anomalies
    return Verdict(UNKNOWN if crashed else FAIL, classify(anomalies, verdict.guarantee == EFFECTIVELY_ONCE),
                   anomalies, verdict.expected, verdict.observed, verdict.distinct,
                   verdict.error if crashed else None, verdict.oracle)
