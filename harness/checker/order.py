"""`reordered`: within a key and one output partition, output must follow the model's sequence."""

from __future__ import annotations

from harness.checker.ledger import Ledger, partitions_of
from harness.checker.verdict import Anomaly, Expected
from harness.client.records import Record


class PerKeyOrderChecker:
    """For pipelines that promise per-key order; duplicates and losses are the other checker's business.

    Kafka orders records only within a partition, and a correct sink may key or partition its output
    as it likes, so a key's sequence is followed in each output partition on its own: records of a key
    spread over partitions are never a reordering. The reader returns each partition in offset order,
    so following the batches as they are read follows every (partition, key) in order.

    A duplicate is never also a reordering: which copy is read first depends on how the reader
    interleaves partitions, so a violation that involves an identity read more than once is dropped
    once the whole output is known.
    """

    def __init__(self) -> None:
        self.seq: dict[tuple[int, str], int] = {}  # (partition, key) -> highest seq read there
        self.at: dict[tuple[int, str], str] = {}  # (partition, key) -> the identity that had it
        self.violations: list[tuple[dict, str]] = []  # (example, the identity it came after)

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        highest, at = self.seq, self.at
        for record, partition, identity, want in zip(records, partitions_of(records), identities, wants,
                                                     strict=True):
            if want is None:  # a duplicate or a foreigner
                continue
            key, seq = want.key, want.seq
            where = (partition, key)
            previous = highest.get(where)
            if previous is not None and seq < previous:
                self.violations.append(({"id": identity, "key": key, "seq": seq, "after_seq": previous,
                                         "partition": partition, "offset": record.offset()}, at[where]))
            else:
                highest[where] = seq
                at[where] = identity

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        reordered = Anomaly("reordered")
        for example, after in self.violations:
            if example["id"] not in ledger.extra and after not in ledger.extra:
                reordered.add(example)
        return {"reordered": reordered} if reordered.count else {}
