"""A changelog (update-mode output, read by upserting each key): every update a valid running value,
no key going back in time, the final value of every key there.

Batch boundaries vary between runs, so which intermediate updates appear does too: the model
expects every running value a key may take (Expected.value, not required) and requires only the
final one. An update is then `wrong_value` when it is not one of them, `duplicate` or `divergent`
when it comes again, `lost` when a key's final value is missing, and `regression` when it is lower
than one already read for its key in its partition (a replayed or zombie write landing after a newer
one): Kafka Streams' EOS verifier holds each update to be the next running value; Spark emits at
most one update per key and batch, so a strictly increasing subsequence is its counterpart.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter

from harness.checker.ledger import PARTITION, VALUE, Ledger
from harness.checker.verdict import Anomaly, Expected
from harness.checker.windows import WindowsChecker
from harness.reader import Record

TOTAL = itemgetter(1)


class ChangelogChecker(WindowsChecker):
    """`updates(record values)` reads a batch of updates as (key, running value) pairs (the pipeline's
    batch reader); values of a key only grow."""

    changelog = True  # its verdict can be effectively-once

    def __init__(self, updates: Callable[[list[bytes]], list[tuple[str, int]]]) -> None:
        super().__init__(lambda values: list(map(TOTAL, updates(values))))
        self.updates = updates
        self.highest: dict[tuple[int, str], int] = {}  # (partition, key) -> highest value read there
        self.regression = Anomaly("regression")

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        updates = self.updates(list(map(VALUE, records)))  # each record read once
        self._feed_values(records, list(map(TOTAL, updates)), identities, wants)
        highest = self.highest
        for record, partition, (key, value) in zip(records, map(PARTITION, records), updates, strict=True):
            where = (partition, key)
            top = highest.get(where)
            if top is not None and value < top:
                self.regression.add({"key": key, "value": value, "after_value": top,
                                     "partition": partition, "offset": record.offset()})
            else:
                highest[where] = value

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies = super().anomalies(ledger)
        if self.regression.count:
            anomalies["regression"] = self.regression
        return anomalies
