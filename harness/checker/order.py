"""`reordered`: within a key and one output partition, output must follow the model's sequence."""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_not, itemgetter, lt

from harness.checker.ledger import Ledger, partitions_of
from harness.checker.verdict import Anomaly, Expected
from harness.client.records import Record

FIRST = itemgetter(0)  # of a pair
KEY, SEQ = attrgetter("key"), attrgetter("seq")  # of an Expected
NONE_YET = float("-inf")  # below every sequence: a key's first record in its partition


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
        """Follow each (partition, key)'s sequence through the batch: in C while it only rises (the usual
        case: a million records), else record by record, naming each violation."""
        partitions = partitions_of(records)
        if self._follow(partitions, identities, wants):
            return
        highest, at = self.seq, self.at
        for index, (partition, identity, want) in enumerate(zip(partitions, identities, wants, strict=True)):
            if want is None:  # a duplicate or a foreigner
                continue
            key, seq = want.key, want.seq
            where = (partition, key)
            previous = highest.get(where)
            if previous is not None and seq < previous:
                self.violations.append(({"id": identity, "key": key, "seq": seq, "after_seq": previous,
                                         "partition": partition, "offset": records[index].offset()}, at[where]))
            else:
                highest[where] = seq
                at[where] = identity

    def _follow(self, partitions: list[int], identities: list[str], wants: list[Expected | None]) -> bool:
        """The batch followed without a loop in Python: `map` sets each place's sequence while reading the
        one before it. False (and nothing changed) when some sequence falls: the caller walks the batch."""
        firsts = list(map(is_not, wants, repeat(None)))  # not a duplicate or a foreigner
        followed = list(compress(wants, firsts))
        places = list(zip(compress(partitions, firsts), map(KEY, followed), strict=True))
        seqs = list(map(SEQ, followed))
        before_batch = dict(self.seq)
        before = list(map(FIRST, zip(map(self.seq.get, places, repeat(NONE_YET)),
                                     map(self.seq.__setitem__, places, seqs), strict=True)))
        if any(map(lt, seqs, before)):
            self.seq = before_batch
            return False
        self.at.update(zip(places, compress(identities, firsts), strict=True))
        return True

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        reordered = Anomaly("reordered")
        for example, after in self.violations:
            if example["id"] not in ledger.extra and after not in ledger.extra:
                reordered.add(example)
        return {"reordered": reordered} if reordered.count else {}
