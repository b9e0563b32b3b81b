"""Spark's streaming checkpoint folder, read through the engine (harness.gate.relay_files): which batches
were planned and committed.

`offsets/N` is written before batch N runs (its last lines: each source's end offsets as JSON);
`commits/N` after the sink finished batch N.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from harness.history import History
from harness.run.poller import Poller

STATE_FILES = (".delta", ".snapshot", ".zip", ".changelog")


def whole_number(name: str) -> int | None:
    """The number a file name of Spark's (`offsets/12`) or the harness's is, in ASCII digits; None for any other
    name. The sink writes beside Spark (`commits/²`: a digit to str.isdigit(), not to int()), and a name no one
    here wrote is ignored, never the end of the thread that reads it."""
    return int(name) if name.isascii() and name.isdigit() else None


class Files(Protocol):
    """Where the checkpoint volume is read from (harness.gate.relay_files.RelayFiles)."""

    def walk(self, path: str) -> list[str]: ...

    def read_text(self, path: str) -> str: ...


class CheckpointFolder:
    """A read-only view of one query's checkpoint folder. Each question lists the folder (a round trip to
    the relay) unless given a listing: a caller asking several at once lists it once."""

    def __init__(self, files: Files, path: str) -> None:
        self.files = files
        self.path = path

    def listing(self) -> list[tuple[str, ...]]:
        """Every file of the folder, as path parts relative to it."""
        return [tuple(name.split("/")) for name in self.files.walk(self.path)]

    @staticmethod
    def _batches(listing: list[tuple[str, ...]], log: str) -> list[int]:
        found = (whole_number(parts[1]) for parts in listing if len(parts) == 2 and parts[0] == log)
        return sorted(batch for batch in found if batch is not None)

    def planned(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        """Batch ids whose offsets were written (`offsets/N`)."""
        return self._batches(self.listing() if listing is None else listing, "offsets")

    def committed(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        """Batch ids the sink finished (`commits/N`)."""
        return self._batches(self.listing() if listing is None else listing, "commits")

    def end_offsets(self, batch: int) -> dict[str, dict[int, int]]:
        """The source end offsets of a planned batch: topic -> partition -> offset."""
        lines = self.files.read_text(f"{self.path}/offsets/{batch}").splitlines()
        offsets: dict[str, dict[int, int]] = {}
        for line in lines[2:]:
            line = line.strip()
            if not line.startswith("{"):
                continue
            for topic, partitions in json.loads(line).items():
                offsets[topic] = {int(p): int(o) for p, o in partitions.items()}
        return offsets

    def planned_at_ms(self, batch: int) -> int | None:
        """When Spark planned a batch (`batchTimestampMs` in the metadata line of `offsets/N`), None when
        unreadable. A re-run of the batch after a restart keeps it: it reuses `offsets/N`."""
        try:
            lines = self.files.read_text(f"{self.path}/offsets/{batch}").splitlines()
            return int(json.loads(lines[1])["batchTimestampMs"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None

    def state_committed(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        """Batch ids with a state store version written by some task: version V holds the state after
        batch V - 1 (`<V>.delta` or `<V>.snapshot` of the default provider, `<V>.zip` or `<V>.changelog`
        of RocksDB's), in `state/<operator>/<partition>/`."""
        versions = set()
        for parts in self.listing() if listing is None else listing:
            if len(parts) == 4 and parts[0] == "state":
                version, dot, suffix = parts[3].partition(".")
                if (number := whole_number(version)) is not None and dot + suffix in STATE_FILES:
                    versions.add(number)
        return sorted(version - 1 for version in versions if version > 0)

    def stateful(self, listing: list[tuple[str, ...]] | None = None) -> bool:
        """Whether the query keeps state (Spark writes under `state/` for stateful operators)."""
        return any(parts[0] == "state" for parts in (self.listing() if listing is None else listing))

    def consumed(self, topic: str, lag: int = 0, listing: list[tuple[str, ...]] | None = None) -> dict[int, int]:
        """End offsets of `topic` in the last committed batch, or `lag` committed batches before it
        (empty when there is none)."""
        committed = self.committed(listing)
        if len(committed) <= lag:
            return {}
        try:
            return self.end_offsets(committed[-1 - lag]).get(topic, {})
        except (OSError, ValueError):
            return {}


class BatchWatcher:
    """Polls a checkpoint folder and records each batch planned and committed in the history.

    Listeners (fault triggers) are called with the event as soon as it is seen.
    """

    def __init__(self, folder: CheckpointFolder, history: History, interval: float = 0.2) -> None:
        self.folder = folder
        self.history = history
        self.listeners: list[Callable[[dict], None]] = []
        self._seen: dict[str, set[int]] = {"batch.planned": set(), "batch.committed": set(),
                                           "state.committed": set()}
        self._poller = Poller("batch-watcher", interval, self.poll)

    def start(self) -> BatchWatcher:
        self._poller.start()
        return self

    def stop(self) -> None:
        self._poller.stop()
        self.poll()

    def poll(self) -> None:
        folder = self.folder
        try:
            listing = folder.listing()
        except OSError:  # the relay is gone: the run is ending, or the scenario fails on its own account
            return
        for point, batches in (("batch.planned", folder.planned(listing)),
                               ("state.committed", folder.state_committed(listing)),
                               ("batch.committed", folder.committed(listing))):
            for batch in batches:
                if batch in self._seen[point]:
                    continue
                self._seen[point].add(batch)
                fields: dict = {"batch": batch}
                if point == "batch.planned":
                    try:
                        fields["end_offsets"] = folder.end_offsets(batch)
                    except (OSError, ValueError):
                        fields["end_offsets"] = None
                event = self.history.record(point, **fields)
                for listener in self.listeners:
                    listener(event)
