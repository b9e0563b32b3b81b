"""`batch_committed_twice`: the store's own commit history shows one streaming batch committed in two
commits (two Delta versions, two PostgreSQL transactions that wrote its rows again), whatever the rows
show: a key or an upsert can hide the duplicate rows of a replayed batch; its second commit cannot hide."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.checker.verdict import Anomaly, Verdict, with_anomaly
from harness.output.commits import Commit

NAME = "batch_committed_twice"


def batches_of(commits: Iterable[Commit], running: Mapping[int, int]) -> tuple[dict[int, list[Commit]], dict[int, str]]:
    """Each batch's commits, and how each commit named its batch. A commit's batch is the one its log
    entry names, else the one Spark was running when it committed (`running`: version -> batch, from the
    commit's time and the batches' planning times: harness.run.table_watch); a version of neither is not
    attributed, so no guess accuses a sink. A rewrite (compaction, clustering, OPTIMIZE) holds no batch,
    whenever it committed: it moves rows a batch's commit wrote (harness.checker.rewrites judges it)."""
    by_batch: dict[int, list[Commit]] = {}
    said: dict[int, str] = {}
    for commit in commits:
        if commit.rewrite:
            continue
        batch = commit.batch if commit.batch is not None else running.get(commit.version)
        if batch is None:
            continue
        said[commit.version] = commit.said_by or "committed while Spark ran the batch"
        by_batch.setdefault(batch, []).append(commit)
    return by_batch, said


def batches_committed_twice(commits: Iterable[Commit], running: Mapping[int, int],
                            unit: str = "table version") -> Anomaly | None:
    """Batches held by more than one commit (harness.checker.commits.batches_of). Where the store tells
    which commits repeat others' rows (`Commit.repeats`: a PostgreSQL batch may be committed in parts),
    only those that repeat count. An example names the batch, its commits (`unit`: a table version, a
    transaction), and how each named its batch."""
    by_batch, said = batches_of(commits, running)
    anomaly = Anomaly(NAME)
    for batch, found in sorted(by_batch.items()):
        if any(c.repeats is not None for c in found):
            for group in _writes_again(found):
                anomaly.add(_example(batch, group, said, unit, again=True), weight=len(group) - 1)
        elif len(found) > 1:
            anomaly.add(_example(batch, found, said, unit, again=False), weight=len(found) - 1)
    return anomaly if anomaly.count else None


def _writes_again(commits: list[Commit]) -> list[list[Commit]]:
    """The commits that wrote the same rows of a batch, in groups (each a part written more than once)."""
    by_version = {c.version: c for c in commits}
    groups: list[list[Commit]] = []
    placed: set[int] = set()
    for commit in commits:
        if not commit.repeats or commit.version in placed:
            continue
        group, todo = [], [commit.version]
        while todo:
            version = todo.pop()
            if version in placed or version not in by_version:
                continue
            placed.add(version)
            group.append(by_version[version])
            todo += by_version[version].repeats or ()
        groups.append(sorted(group, key=lambda c: c.version))
    return groups


def _example(batch: int, found: list[Commit], said: dict[int, str], unit: str, again: bool) -> dict:
    """An example: the batch, its commits, and in words what they show (`again`: they wrote the same rows)."""
    listed = ", ".join(str(c.version) for c in found)
    example = {"batch": batch, "versions": [c.version for c in found], "app_ids": [c.app_id for c in found],
               "operations": [c.operation for c in found], "batch_named_by": [said[c.version] for c in found],
               "explanation": f"batch {batch} was committed {len(found)} times: {unit}s {listed}"}
    if again:
        example["rows"] = [c.rows for c in found]
        example["explanation"] = (f"batch {batch} was written {len(found)} times: {unit}s {listed} committed the "
                                  f"same rows ({', '.join(str(c.rows) for c in found)} rows)")
    return example


def with_commit_history(verdict: Verdict, anomaly: Anomaly | None) -> Verdict:
    """The verdict with the history's anomaly: a fail on its evidence (a crashed checker stays unknown)."""
    return with_anomaly(verdict, anomaly)
