"""A committed table's data files against what its commits recorded. A table format's commit records each
file it adds with its row count (Iceberg's manifest entry); a file read back with another count was written
again after its commit: the snapshot no longer describes its files (a reader pruning by the commit's
statistics may skip or misread them), whether or not the rows still add up."""

from __future__ import annotations

from collections.abc import Callable

from harness.checker.verdict import Anomaly, Verdict, with_anomaly

NAME = "file_rewritten"


def with_rewritten_files(verdict: Verdict, rewritten: list[dict], why: Callable[[str], str | None]) -> Verdict:
    """The verdict with a `file_rewritten` anomaly for each file read with other rows than its commit recorded
    (`why`: a file -> how it came to be written again, where the history says; harness.run.explain.overwrites)."""
    if not rewritten:
        return verdict
    anomaly = Anomaly(NAME)
    for file in rewritten:
        said = why(file["file"])
        anomaly.add({**file, **({"explanation": said} if said else {})})
    return with_anomaly(verdict, anomaly)
