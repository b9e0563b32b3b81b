"""A state table: an upsert or MERGE keeps one row per key, so the table is judged on what it says, each
key's row against that key's final value (the model's last result for the key, or the reference run's
last update of it), never as a log of results (where a count of rows cannot see a value added twice).

A key's row with another value is `wrong_value` (the key, the expected and the found value); a key with
no row is `lost`, a row of a key the oracle does not have `unexpected`, two rows of one key `duplicate`
(the same value) or `divergent` (others): the table broke its one row per key. In an incomplete run a
key's row may rightly hold an earlier value, so only rows that cannot be right are counted there.
Whether the table is a state table is the sink's declaration (`TABLE = "state"`, harness.subject), never
guessed from the rows: rows that look keyed could hide the duplicates of a log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from harness.checker.compose import close_verdict
from harness.checker.ledger import shown
from harness.checker.verdict import NONE, UNKNOWN, Anomaly, Verdict
from harness.client.reader import ReadResult
from harness.client.records import Record

ValueCheck = Callable[[list[Record], list[str]], dict[str, Anomaly]]  # rows whose identity is the final one


def shown_value(value: object) -> object:
    """A value as an example shows it: bytes escaped and cut (harness.checker.ledger.shown), others as they are."""
    return shown(value) if isinstance(value, bytes) else value


def key_of_bytes(key: bytes | None) -> str:
    """A row's key column as text (a state table's key; the model's keys are text)."""
    return "" if key is None else key.decode(errors="backslashreplace")


class StateTableCheck:
    """Rows fed as the table is read, judged at the end: `finals` is each key's final value as `says` reads
    a row's value (the pipeline's identity of it for the model, its bytes for the reference); `values`,
    when given, checks what else a row carries (the model's value of a result) on the rows whose
    identity is already the final one; `carries`, the value each key's final result carries (the
    model's), shown beside the expected identity."""

    def __init__(self, finals: Mapping[str, object], says: Callable[[bytes], object], oracle: str,
                 values: ValueCheck | None = None, carries: Mapping[str, object] | None = None) -> None:
        self.finals = finals
        self.says = says
        self.oracle = oracle
        self.values = values
        self.carries = carries or {}
        self.rows: dict[str, list[Record]] = {}
        self.count = 0

    def feed(self, batch: list[Record]) -> None:
        for record in batch:
            self.rows.setdefault(key_of_bytes(record.key()), []).append(record)
        self.count += len(batch)

    def verdict(self, read: ReadResult, incomplete: Mapping[str, object] | None = None) -> Verdict:
        anomalies: dict[str, Anomaly] = {}

        def add(name: str, example: dict, weight: int = 1) -> None:
            anomalies.setdefault(name, Anomaly(name)).add(example, weight)

        for key, found in self.rows.items():
            if len(found) > 1:
                values = [r.value() for r in found]
                add("duplicate" if len(set(values)) == 1 else "divergent",
                    {"key": key, "rows": len(found), "values": [shown_value(v) for v in values[:5]],
                     "partition": found[1].partition(), "offset": found[1].offset(),
                     "reason": "a state table keeps one row per key"}, len(found) - 1)
        matched: list[Record] = []
        identities: list[str] = []
        for key, want in self.finals.items():
            found = self.rows.get(key)
            if not found:
                if not incomplete:
                    add("lost", {"key": key, "expected": shown_value(want), **self._carried(key)})
                continue
            row = found[0]
            try:
                got = self.says(row.value())
            except Exception as error:  # noqa: BLE001 - whatever the pipeline's identity raises: the row's anomaly
                add("unreadable", {"key": key, "value": shown(row.value()), "error": str(error),
                                   "partition": row.partition(), "offset": row.offset()})
                continue
            if got == want:
                matched.append(row)
                identities.append(str(got))
            elif not incomplete:
                add("wrong_value", {"key": key, "expected": shown_value(want), **self._carried(key),
                                    "found": shown_value(got),
                                    "value": shown(row.value()), "partition": row.partition(),
                                    "offset": row.offset()})
        for key in self.rows.keys() - self.finals.keys():
            row = self.rows[key][0]
            add("unexpected", {"key": key, "value": shown(row.value()), "partition": row.partition(),
                               "offset": row.offset()})
        if self.values is not None and matched:
            try:
                found = self.values(matched, identities)
            except Exception as error:  # noqa: BLE001 - a crashed check is unknown, never a pass
                return Verdict(UNKNOWN, NONE, anomalies, len(self.finals), self.count, len(self.rows), repr(error),
                               self.oracle)
            for name, anomaly in found.items():
                if name == "wrong_value" and incomplete:
                    continue
                mine = anomalies.setdefault(name, Anomaly(name))
                for n, example in enumerate(anomaly.examples):  # the first takes the count the examples leave
                    mine.add(example, anomaly.count - len(anomaly.examples) + 1 if n == 0 else 1)
        verdict = close_verdict(anomalies, read, incomplete, False, len(self.finals), self.count, len(self.rows))
        verdict.oracle = self.oracle
        return verdict

    def _carried(self, key: str) -> dict:
        """The value the key's final result carries, where the oracle has one."""
        return {"expected_value": self.carries[key]} if key in self.carries else {}
