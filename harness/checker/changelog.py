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

from harness.checker.ledger import Ledger
from harness.checker.verdict import Anomaly, Expected
from harness.checker.windows import WindowsChecker
from harness.reader import Record


class ChangelogChecker(WindowsChecker):
    """`update(record bytes)` reads an update as (key, running value); values of a key only grow."""

    changelog = True  # its verdict can be effectively-once

    def __init__(self, update: Callable[[bytes], tuple[str, int]]) -> None:
        super().__init__(lambda value: update(value)[1])
        self.update = update
        self.highest: dict[tuple[int, str], int] = {}  # (partition, key) -> highest value read there
        self.regression = Anomaly("regression")

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        updates = [self.update(record.value()) for record in records]  # each record read once
        self._feed_values(records, [value for _, value in updates], identities, wants)
        highest = self.highest
        for record, (key, value) in zip(records, updates, strict=True):
            where = (record.partition(), key)
            top = highest.get(where)
            if top is not None and value < top:
                self.regression.add({"key": key, "value": value, "after_value": top,
                                     "partition": where[0], "offset": record.offset()})
            else:
                highest[where] = value

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        anomalies = super().anomalies(ledger)
        if self.regression.count:
            anomalies["regression"] = self.regression
        return anomalies
