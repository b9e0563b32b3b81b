"""The differential oracle: a pipeline without a model is checked against its own fault-free output.

A fault-free run of the same pipeline on the same workload, through a reference sink, is the model.
An append output compares as a multiset of records (key and value bytes): a record read more often
than the reference has it is a `duplicate` (`unexpected` when the reference never had it), one read
less often is `lost`. An update output (a changelog, read by upserting each key) compares as its final
table: batch boundaries differ between runs, so only each key's last value is fixed; a key missing is
`lost`, another last value `wrong_value`, a key the reference never had `unexpected`, and an update
repeated identically right after itself a `duplicate` (effectively-once alone) when the reference
never repeats one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from harness.checker.compose import close_verdict
from harness.checker.ledger import shown
from harness.checker.verdict import EXAMPLES, Anomaly, Verdict
from harness.client.reader import ReadResult
from harness.client.records import Record, Records

APPEND = "append"
UPDATE = "update"
MODES = (APPEND, UPDATE)

Content = tuple[bytes | None, bytes | None]  # (key, value) of one output record


def _content(records: Records) -> Counter[Content]:
    """How often each (key, value) occurs; counted in C (zip, Counter) over the columns, 1M records in ~1 s."""
    return Counter(zip(records.keys, records.values, strict=True))


def _example(content: Content, **fields: object) -> dict:
    key, value = content
    return {"key": None if key is None else shown(key), "value": None if value is None else shown(value), **fields}


class FinalTable:
    """Each key's last value in its partition, and how often an update repeated the one before it."""

    def __init__(self) -> None:
        self.last: dict[tuple[int, bytes | None], bytes | None] = {}
        self.repeats = 0
        self.repeat_examples: list[Content] = []

    def add(self, records: Iterable[Record]) -> None:
        last = self.last
        for record in records:
            where, value = (record.partition(), record.key()), record.value()
            if where in last and last[where] == value:
                self.repeats += 1
                if len(self.repeat_examples) < EXAMPLES:
                    self.repeat_examples.append((where[1], value))
            last[where] = value

    def finals(self) -> tuple[dict[bytes | None, bytes | None], dict[bytes | None, set[bytes | None]]]:
        """key -> last value; and keys whose partitions disagree on it (a key written to several)."""
        values: dict[bytes | None, set[bytes | None]] = {}
        for (_, key), value in self.last.items():
            values.setdefault(key, set()).add(value)
        finals = {key: next(iter(found)) for key, found in values.items() if len(found) == 1}
        return finals, {key: found for key, found in values.items() if len(found) > 1}


class DifferentialCheck:
    """One output checked against a reference output, with `feed`/`verdict` like OutputCheck."""

    oracle = "differential"

    def __init__(self, reference: Iterable[Record], mode: str = APPEND) -> None:
        if mode not in MODES:
            raise ValueError(f"output mode '{mode}': one of {', '.join(MODES)}")
        self.mode = mode
        self.reference = Records.of(reference)
        # what the reference holds, computed once: its records counted, or its final table
        self.want = _content(self.reference) if mode == APPEND else Counter()
        self.want_table = _table(self.reference) if mode == UPDATE else FinalTable()
        self.records = Records()

    def feed(self, batch: list[Record]) -> None:
        self.records.extend(batch)

    def verdict(self, read: ReadResult, incomplete: Mapping[str, object] | None = None) -> Verdict:
        """Compare; in an incomplete run nothing is `lost` (the input was not all consumed)."""
        got = _content(self.records)
        anomalies = self._append(got) if self.mode == APPEND else self._update()
        if incomplete:
            anomalies.pop("lost", None)
        expected = len(self.reference) if self.mode == APPEND else len(self.want_table.finals()[0])
        distinct = len(got)
        verdict = close_verdict(anomalies, read, incomplete, self.mode == UPDATE, expected, len(self.records),
                                distinct)
        verdict.oracle = self.oracle
        return verdict

    def _append(self, got: Counter[Content]) -> dict[str, Anomaly]:
        want = self.want
        anomalies: dict[str, Anomaly] = {}
        extras = {content: count - want[content] for content, count in got.items() if count > want[content]}
        where = self._first_places(extras)
        for content, extra in extras.items():
            name = "duplicate" if content in want else "unexpected"
            anomalies.setdefault(name, Anomaly(name)).add(
                _example(content, count=got[content], reference=want[content], **where[content]), extra)
        for content, count in want.items():
            missing = count - got.get(content, 0)
            if missing > 0:
                anomalies.setdefault("lost", Anomaly("lost")).add(_example(content, count=got[content],
                                                                           reference=count), missing)
        return anomalies

    def _first_places(self, contents: Mapping[Content, int]) -> dict[Content, dict]:
        """Where each of these contents was first read (a report shows the record's place)."""
        where: dict[Content, dict] = {}
        if contents:
            for record in self.records:
                content = (record.key(), record.value())
                if content in contents and content not in where:
                    where[content] = {"partition": record.partition(), "offset": record.offset()}
        return where

    def _update(self) -> dict[str, Anomaly]:
        observed = _table(self.records)
        (want, _), (got, split) = self.want_table.finals(), observed.finals()
        anomalies: dict[str, Anomaly] = {}
        for key, value in want.items():
            if key in split:
                anomalies.setdefault("divergent", Anomaly("divergent")).add(
                    _example((key, value), finals=[None if v is None else shown(v) for v in split[key]]))
            elif key not in got:
                anomalies.setdefault("lost", Anomaly("lost")).add(_example((key, value)))
            elif got[key] != value:
                anomalies.setdefault("wrong_value", Anomaly("wrong_value")).add(
                    _example((key, got[key]), reference=None if value is None else shown(value)))
        for key in sorted((set(got) | set(split)) - set(want), key=repr):
            anomalies.setdefault("unexpected", Anomaly("unexpected")).add(_example((key, got.get(key))))
        if observed.repeats and not self.want_table.repeats:
            duplicate = anomalies.setdefault("duplicate", Anomaly("duplicate"))
            for content in observed.repeat_examples:
                duplicate.add(_example(content, reason="the same update right after itself"), 0)
            duplicate.count += observed.repeats
        return anomalies


class Capture:
    """A reference run's oracle: its output is the model, so it judges only that the run finished and no
    transaction was left open."""

    def feed(self, batch: list[Record]) -> None:
        """The reader keeps the records."""

    def verdict(self, read: ReadResult, incomplete: Mapping[str, object] | None = None) -> Verdict:
        verdict = close_verdict({}, read, incomplete, False, len(read.records), len(read.records),
                                len(read.records))
        verdict.oracle = "reference"
        return verdict


def _table(records: Iterable[Record]) -> FinalTable:
    table = FinalTable()
    table.add(records)
    return table


def disagreement(first: Iterable[Record], second: Iterable[Record], mode: str) -> dict[str, Anomaly]:
    """How two fault-free outputs of one pipeline differ (nothing when it is deterministic)."""
    empty = ReadResult([], {}, {})
    check = DifferentialCheck(first, mode)
    check.feed(second)
    return check.verdict(empty).anomalies
