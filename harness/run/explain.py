"""Explains a failing scenario's examples the way Elle explains a history: for a duplicate, the write of
each copy (which transaction, which container sent it, when it was committed) and the faults between
them; for a lost record, what became of its write (aborted, left open, or never in the log) and the
faults from its write to its end.

The broker's log says which producer wrote each batch and how its transaction ended
(harness.cluster.dump_log); the history's gate points say which container held that producer id; its
triggers say which faults fired when. An explanation is added to the example as `explanation`; one that
cannot be made leaves the example as it was (the verdict never depends on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness.checker.verdict import Verdict
from harness.client.records import Records
from harness.cluster.dump_log import Batch, batch_at, end_of

Writers = dict[tuple[int, int], str]  # (producer id, epoch) -> "container (role)"
EVENT_TYPES = ("scenario.start", "point", "trigger")  # what an Explainer reads of a history (not its sends)


def writers(events: Iterable[dict]) -> Writers:
    """Who sent each producer id and epoch's requests, from the gate points that carry them."""
    found: Writers = {}
    for event in events:
        if event.get("type") == "point" and event.get("producer_id") is not None:
            found.setdefault((event["producer_id"], event["producer_epoch"]), f"{event['container']} ({event['role']})")
    return found


class Explainer:
    """Explains examples against one output topic's log and one scenario's history."""

    def __init__(self, log: dict[int, list[Batch]], events: list[dict]) -> None:
        self.log = log
        self.writers = writers(events)
        self.start = next((e["t"] for e in events if e.get("type") == "scenario.start"), 0.0)
        self.triggers = [(e["t"], e["step"]) for e in events if e.get("type") == "trigger"]

    def write(self, partition: int, offset: int) -> tuple[str, float | None, float | None]:
        """One write in words, when it was written, and when it became visible or was ended (seconds into
        the scenario; None where the log does not say)."""
        batches = self.log.get(partition, [])
        batch = batch_at(batches, offset)
        if batch is None:
            return f"p{partition}@{offset} (not in the log)", None, None
        who = self.writers.get((batch.producer_id, batch.epoch), "a producer the gate did not see")
        written = batch.create_ms / 1000 - self.start
        if not batch.transactional:
            return (f"p{partition}@{offset} by producer (pid {batch.producer_id}, epoch {batch.epoch}) in {who}, "
                    f"not transactional, written at {written:.1f} s"), written, written
        end = end_of(batches, batch)
        where = f"p{partition}@{offset} in transaction (pid {batch.producer_id}, epoch {batch.epoch}) by {who}"
        if end is None:
            return f"{where}, never committed nor aborted", written, None
        at = end.create_ms / 1000 - self.start
        return f"{where}, {'committed' if end.marker == 'COMMIT' else 'aborted'} at {at:.1f} s", written, at

    def between(self, first: float | None, last: float | None, span: str = "between them") -> str:
        """The faults that fired between two moments (every fault, when one is unknown), `span` saying which."""
        low, high = first if first is not None else float("-inf"), last if last is not None else float("inf")
        fired = [f"{step} at {t - self.start:.1f} s" for t, step in self.triggers if low <= t - self.start <= high]
        return f"; {span}: {', '.join(fired)}" if fired else f"; no fault fired {span}"

    def writes(self, places: list[tuple[int, int]]) -> tuple[str, float | None, float | None]:
        """Several writes in words, the first one's time and the last end (None where the log does not say)."""
        writes = [self.write(p, o) for p, o in places]
        written = [w for _, w, _ in writes if w is not None]
        ended = [e for _, _, e in writes if e is not None]
        return "; ".join(text for text, _, _ in writes), min(written, default=None), max(ended, default=None)

    def duplicate(self, places: list[tuple[int, int]]) -> str:
        """Every copy's write, and the faults from the first copy's write to the last copy's end."""
        text, first, last = self.writes(places)
        return f"written {len(places)} times: {text}" + self.between(first, last)

    def lost(self, places: list[tuple[int, int]]) -> str:
        if not places:
            return "no write of it found in the output's log (its records searched by their values as text)"
        text, first, last = self.writes(places)
        span = "between its write and its end" if last is not None else "since its write"
        return f"its writes: {text}" + self.between(first, last, span)

    def payload_places(self, identity: Callable[[bytes], str], wanted: set[str]) -> dict[str, list[tuple[int, int]]]:
        """Where records of these identities sit in the log, committed or not (the values as the tool prints)."""
        found: dict[str, list[tuple[int, int]]] = {}
        for partition, batches in self.log.items():
            for batch in batches:
                for offset, payload in batch.payloads.items():
                    try:
                        name = identity(payload.encode())
                    except Exception:  # noqa: BLE001 - a record that is not the pipeline's
                        continue
                    if name in wanted:
                        found.setdefault(name, []).append((partition, offset))
        return found


def copies(records: Records, identities: Iterable[str], wanted: set[str]) -> dict[str, list[tuple[int, int]]]:
    """Where each wanted identity was read, every copy."""
    found: dict[str, list[tuple[int, int]]] = {}
    for identity, partition, offset in zip(identities, records.partitions, records.offsets, strict=True):
        if identity in wanted:
            found.setdefault(identity, []).append((partition, offset))
    return found


def identity_or_none(identity: Callable[[bytes], str], value: bytes) -> str | None:
    """A record's identity, None for one the pipeline cannot read (an `unreadable` anomaly of its own)."""
    try:
        return identity(value)
    except Exception:  # noqa: BLE001 - whatever the pipeline's identity raises
        return None


def explain(verdict: Verdict, explainer: Explainer, records: Records, identities: Iterable[str],
            identity: Callable[[bytes], str]) -> None:
    """Add an `explanation` to each duplicate and lost example that names its identity (lost ones only
    when the log was read with its values: a large output's is not)."""
    duplicates = verdict.anomalies.get("duplicate")
    lost = verdict.anomalies.get("lost")
    if duplicates:
        wanted = {e["id"] for e in duplicates.examples if "id" in e}
        places = copies(records, identities, wanted)
        for example in duplicates.examples:
            if example.get("id") in places:
                example["explanation"] = explainer.duplicate(places[example["id"]])
    if lost and any(batch.payloads for batches in explainer.log.values() for batch in batches):
        wanted = {e["id"] for e in lost.examples if "id" in e}
        places = explainer.payload_places(identity, wanted)
        for example in lost.examples:
            if "id" in example:
                example["explanation"] = explainer.lost(places.get(example["id"], []))


def explain_by_commits(verdict: Verdict, records: Records, identities: Iterable[str],
                       commit_of: Callable[[int], int | None], batch_of: dict[int, int],
                       unit: str = "table version", overwritten: Callable[[int], str | None] = lambda _: None) -> None:
    """Add an `explanation` to each duplicate example of a table output: the commits (`unit`: table
    versions, transactions) that hold its copies and the batch each committed (`batch_of`: commit -> batch,
    where known), and a data file of a copy written again after it was first written (`overwritten`:
    partition -> that in words, harness.run.explain.overwrites)."""
    duplicates = verdict.anomalies.get("duplicate")
    if not duplicates:
        return
    places = copies(records, identities, {e["id"] for e in duplicates.examples if "id" in e})
    for example in duplicates.examples:
        found = places.get(example.get("id"))
        if not found:
            continue
        versions = sorted({v for v in (commit_of(partition) for partition, _ in found) if v is not None})
        named = [f"{v} (batch {batch_of[v]})" if v in batch_of else str(v) for v in versions]
        again = sorted({w for w in (overwritten(partition) for partition, _ in found) if w is not None})
        example["explanation"] = (f"read {len(found)} times: written by {unit}{'s' if len(named) > 1 else ''} "
                                  f"{' and '.join(named)}" + "".join(f"; {w}" for w in again))


def overwrites(events: Iterable[dict]) -> dict[str, str]:
    """Each object the S3 server wrote twice (`s3.overwrite`, harness.gate.object_writes), `bucket/key` -> in
    words, its times in seconds into the scenario."""
    start, found = 0.0, {}
    for event in events:
        if event.get("type") == "scenario.start":
            start = event["t"]
        elif event.get("type") == "s3.overwrite":
            found[f"{event['bucket']}/{event['key']}"] = (
                f"its data file {event['key'].rpartition('/')[2]} was overwritten: written at "
                f"{event['first_at'] - start:.1f} s by {event['first_by']}, again at {event['t'] - start:.1f} s "
                f"by {event['by']}")
    return found
