"""`reordered`: within a key and one output partition, output must follow the model's sequence."""

from __future__ import annotations

from itertools import compress, groupby, repeat
from operator import attrgetter, countOf, is_not, itemgetter, lt

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

    Only an output whose partitions are sequences has an order to keep: a table's data files are not
    (an upsert shuffles a batch by key, a writer sorts or clusters its rows, a compaction rewrites them).
    `ordered` is set False for such an output (harness.checker.compose.OutputCheck), and nothing is followed.
    """

    ordered = True  # the output's partitions are sequences (a Kafka partition's offsets)

    def __init__(self) -> None:
        self.seq: dict[int, dict[str, int]] = {}  # partition -> key -> highest seq read there
        self.at: dict[int, dict[str, str]] = {}  # partition -> key -> the identity that had it
        self.violations: list[tuple[dict, str]] = []  # (example, the identity it came after)

    def feed(self, records: list[Record], identities: list[str], wants: list[Expected | None]) -> None:
        """Follow each (partition, key)'s sequence through the batch, a run of one partition at a time
        (a batch comes in such runs: a table's file, a topic's fetch)."""
        if not self.ordered:
            return
        partitions = partitions_of(records)
        places: range | list[int] = range(len(wants))  # each followed record's place in the batch
        if None in wants:  # duplicates and foreigners are not followed
            firsts = list(map(is_not, wants, repeat(None)))
            partitions, identities, places = (list(compress(column, firsts))
                                              for column in (partitions, identities, places))
            wants = list(compress(wants, firsts))
        keys, seqs = list(map(KEY, wants)), list(map(SEQ, wants))  # type: ignore[arg-type]
        start = 0
        for partition, run in groupby(partitions):
            end = start + countOf(run, partition)
            if not self._follow(partition, keys[start:end], seqs[start:end], identities[start:end]):
                self._walk(partition, keys[start:end], seqs[start:end], identities[start:end],
                           [records[place] for place in places[start:end]])
            start = end

    def _follow(self, partition: int, keys: list[str], seqs: list[int], identities: list[str]) -> bool:
        """A run of one partition followed without a loop in Python: `map` sets each key's sequence
        while reading the one before it. False (and nothing changed) when some sequence falls."""
        highest = self.seq.setdefault(partition, {})
        before = list(map(FIRST, zip(map(highest.get, keys, repeat(NONE_YET)), map(highest.__setitem__, keys, seqs),
                                     strict=True)))
        if any(map(lt, seqs, before)):
            for key, seq in zip(reversed(keys), reversed(before), strict=True):
                if seq is NONE_YET:
                    del highest[key]
                else:
                    highest[key] = seq  # type: ignore[assignment]
            return False
        self.at.setdefault(partition, {}).update(zip(keys, identities, strict=True))
        return True

    def _walk(self, partition: int, keys: list[str], seqs: list[int], identities: list[str],
              records: list[Record]) -> None:
        """A run where some sequence falls, record by record, naming each violation."""
        highest, at = self.seq[partition], self.at.setdefault(partition, {})
        for key, seq, identity, record in zip(keys, seqs, identities, records, strict=True):
            previous = highest.get(key)
            if previous is not None and seq < previous:
                self.violations.append(({"id": identity, "key": key, "seq": seq, "after_seq": previous,
                                         "partition": partition, "offset": record.offset()}, at[key]))
            else:
                highest[key] = seq
                at[key] = identity

    def anomalies(self, ledger: Ledger) -> dict[str, Anomaly]:
        reordered = Anomaly("reordered")
        for example, after in self.violations:
            if example["id"] not in ledger.extra and after not in ledger.extra:
                reordered.add(example)
        return {"reordered": reordered} if reordered.count else {}
