"""A changelog (update-mode output, read by upserting each key): every update a valid running value,
no key going back in time, the final value of every key there.

Batch boundaries vary between runs, so which intermediate updates appear does too: the model
expects every running value a key may take (Expected.value, not required) and requires only the
final one. An update is then `wrong_value` when it is not one of them, `duplicate` or `divergent`
when it comes again, `lost` when a key's final value is missing, and `regression` when it is lower
than one already read for its key in its partition (a replayed or zombie write landing after a newer
one): Kafka Streams' EOS verifier holds each update to be the next running value; Spark emits at
most one update per key and batch, so a strictly increasing subsequence is its counterpart. An output
without order (a table's files) has no `regression`: each update is still judged, and the final value
of every key must be there.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby, repeat
from operator import countOf, itemgetter, lt

from harness.checker.ledger import Ledger, partitions_of, values_of
from harness.checker.verdict import Anomaly, Expected
from harness.checker.windows import ValueComparison
from harness.client.records import Record

FIRST = itemgetter(0)  # of a pair
NONE_YET = float("-inf")  # below every value: a key's first update in its partition


class ChangelogChecker:
    """`updates(record values)` reads a batch of updates as two columns, their keys and their running
    values (the pipeline's batch reader); values of a key only grow."""

    changelog = True  # its verdict can be effectively-once
    ordered = True  # the output's partitions are sequences: a value lower than one read before is a regression

    def __init__(self, updates: Callable[[list[bytes]], tuple[list[str], list[int]]]) -> None:
        self.updates = updates
        self.comparison = ValueComparison()  # each update one of its key's running values, once
        self.highest: dict[int, dict[str, int]] = {}  # partition -> key -> highest value read there
        self.regression = Anomaly("regression")

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        keys, totals = self.updates(values_of(records))  # each record read once
        self.comparison.feed(records, totals, identities, wants)
        if not self.ordered:  # a table's files keep no order: no update comes "after" another
            return
        start = 0
        for partition, run in groupby(partitions_of(records)):  # a batch comes in runs of one partition
            end = start + countOf(run, partition)
            self._follow(self.highest.setdefault(partition, {}), keys[start:end], totals[start:end],
                         records[start:end])
            start = end

    def _follow(self, highest: dict[str, int], keys: list[str], totals: list[int], records: list[Record]) -> None:
        """Each key's highest value in one partition, after a run of its updates.

        A million updates are followed in C: `map` sets each key's value while reading the one before
        it. When no value is lower than the one before it, the last is the highest. Else (only with
        a regression) the run is undone and walked update by update, naming each regression.
        """
        before = list(map(FIRST, zip(map(highest.get, keys, repeat(NONE_YET)), map(highest.__setitem__, keys, totals),
                                   strict=True)))
        if not any(map(lt, totals, before)):
            return
        for key, value in zip(reversed(keys), reversed(before), strict=True):
            if value is NONE_YET:
                del highest[key]
            else:
                highest[key] = value  # type: ignore[assignment]
        for record, key, value in zip(records, keys, totals, strict=True):
            top = highest.get(key)
            if top is not None and value < top:
                self.regression.add({"key": key, "value": value, "after_value": top,
                                     "partition": record.partition(), "offset": record.offset()})
            else:
                highest[key] = value

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies = self.comparison.anomalies(ledger)
        if self.regression.count:
            anomalies["regression"] = self.regression
        return anomalies
