"""A Flink job's checkpoints on the run's volume, read as Spark's checkpoint folder is (harness.run.checkpoint):
checkpoint N of any of the scenario's jobs is its batch N. Flink makes a checkpoint's folder as it triggers it
(`<job id>/chk-N`: the checkpoint.triggered point, Spark's batch.planned) and writes its `_metadata` there as it
completes (checkpoint.completed, Spark's batch.committed); a job restored from one numbers its own checkpoints
after it. What the job consumed is what its source committed for its consumer group at its last completed
checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from harness.client.group_offsets import committed_offsets
from harness.run.checkpoint import CheckpointFolder, Files, whole_number

METADATA = "_metadata"


class FolderFiles(Files, Protocol):
    """The volume as the relay reads it, folders too (harness.gate.relay_files.RelayFiles)."""

    def tree(self, path: str) -> tuple[list[str], list[str]]: ...

    def mtime(self, path: str) -> float: ...


def checkpoint_id(name: str) -> int | None:
    """N of a folder `chk-N`, None for any other name."""
    return whole_number(name.removeprefix("chk-")) if name.startswith("chk-") else None


class FlinkCheckpoints(CheckpointFolder):
    """The checkpoints of the jobs `jobs()` names, under `path` (Flink's checkpoint folder)."""

    files: FolderFiles

    def __init__(self, files: FolderFiles, path: str, jobs: Callable[[], list[str]], bootstrap: str,
                 group: str) -> None:
        super().__init__(files, path)
        self.jobs = jobs
        self.bootstrap = bootstrap  # the brokers' direct listener: the harness's own reads skip the gate
        self.group = group

    def listing(self) -> list[tuple[str, ...]]:
        """Every checkpoint folder of the scenario's jobs, (job id, chk-N), and every file in them, (job id,
        chk-N, file), each job's from one walk of its folder."""
        listed: list[tuple[str, ...]] = []
        for job in self.jobs():
            folders, files = self.files.tree(f"{self.path}/{job}")
            listed += [(job, name) for name in folders if "/" not in name]
            listed += [(job, *name.split("/")) for name in files]
        return listed

    def completed(self, listing: list[tuple[str, ...]] | None = None) -> dict[int, str]:
        """Each completed checkpoint's id and its folder."""
        found = {}
        for parts in self.listing() if listing is None else listing:
            if len(parts) == 3 and parts[2] == METADATA and (number := checkpoint_id(parts[1])) is not None:
                found[number] = f"{self.path}/{parts[0]}/{parts[1]}"
        return dict(sorted(found.items()))

    def completed_at(self, number: int) -> float | None:
        """When checkpoint `number` completed (its `_metadata` written, unix seconds); None when it did not."""
        folder = self.completed().get(number)
        return self.files.mtime(f"{folder}/{METADATA}") if folder is not None else None

    def latest(self) -> str | None:
        """The folder of the latest completed checkpoint, where a job restarts from; None before the first."""
        completed = self.completed()
        return completed[max(completed)] if completed else None

    def planned(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        """The checkpoints triggered: their folder made (one that completed since is too)."""
        listed = self.listing() if listing is None else listing
        found = {number for parts in listed if (number := checkpoint_id(parts[1])) is not None}
        return sorted(found)

    def committed(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        return list(self.completed(listing))

    def end_offsets(self, batch: int) -> dict[str, dict[int, int]]:
        return {}  # in the checkpoint's binary metadata; what was consumed is read from the consumer group

    def planned_at_ms(self, batch: int) -> int | None:
        return None

    def state_committed(self, listing: list[tuple[str, ...]] | None = None) -> list[int]:
        return []

    def stateful(self, listing: list[tuple[str, ...]] | None = None) -> bool:
        return False

    def consumed(self, topic: str, lag: int = 0, listing: list[tuple[str, ...]] | None = None) -> dict[int, int]:
        """The offsets the job's source committed for its group at its last completed checkpoint (empty before
        it committed any, or when the broker cannot say)."""
        if not self.completed(listing):  # the source commits its offsets as a checkpoint completes
            return {}
        return committed_offsets(self.bootstrap, self.group, topic)
