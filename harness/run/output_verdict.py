"""The verdict on a scenario's output: what its read shows (the oracle's check), with what the store's own
history shows (a batch committed twice, a key's rows applied again, a rewrite that changed rows, a table
that can no longer be read, a data file written twice), each duplicate of a table explained by the
commits that hold its copies."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from harness.checker.commits import batches_committed_twice, with_commit_history
from harness.checker.oracle import Check
from harness.checker.repeats import repeats, with_idempotent_repeats
from harness.checker.rewrites import rewrites_that_changed_rows
from harness.checker.table_files import with_rewritten_files
from harness.checker.verdict import FAIL, NONE, Anomaly, Verdict, with_anomaly
from harness.client.reader import ReadResult
from harness.client.records import Records
from harness.errors import BadInput
from harness.history import History, read_history
from harness.output.base import Output
from harness.output.commits import Commit, TableCorrupt, parsed
from harness.progress import say
from harness.run.explain import explain_by_commits, identity_or_none, overwrites


class OutputVerdict:
    """Reads one scenario's output and judges it, recording in its history what the store's history shows."""

    def __init__(self, name: str, history: History, s3: bool, identity: Callable[[bytes], str] | None) -> None:
        """`s3`: the table lives on the run's S3 server (whose gate recorded the objects written twice);
        `identity`: the pipeline's, None for a differential pipeline (its duplicates are not explained)."""
        self.name = name
        self.history = history
        self.s3 = s3
        self.identity = identity
        self.corrupt: dict | None = None  # the table.corrupt event, when the table could not be read

    def read(self, output: Output, feed: Callable[[list], None], incomplete: dict | None) -> ReadResult:
        """What the output holds. Where the query failed (a crash loop, or a failure with restarts off), the
        failure is the verdict's cause, whatever the read then finds: an output the sink never made is
        recorded (`read.none`) and read as empty, never bad input that would hide the failure. A table that
        names a file that is not there is read as empty and failed (`table_corrupt`)."""
        try:
            with parsed(output.where):
                return output.read(on_batch=feed)
        except TableCorrupt as corrupt:  # the sink's failure: the verdict says so (table_corrupt)
            self._corrupted(corrupt)
            return ReadResult(Records(), {}, {})
        except BadInput as error:
            if not (incomplete and incomplete.get("anomaly")):
                raise
            self.history.record("read.none", output=output.name, where=output.where, why=str(error))
            return ReadResult(Records(), {}, {})

    def verdict(self, check: Check, read: ReadResult, incomplete: dict | None, output: Output, state: bool,
                running: dict[int, int]) -> Verdict:
        """The check's verdict on what was read, with what the store's history shows: by what each commit
        changed for a state table or a keyed output (a key's row set again), else by the batches its commits
        carry; `running`: version -> the batch Spark ran when it committed (harness.run.table_watch)."""
        try:
            with parsed(output.where):
                commits = output.commits()
        except TableCorrupt as corrupt:  # a version names a file that is gone: its history cannot be told
            self._corrupted(corrupt)
            commits = []
        try:  # each rewrite (a compaction) against the table before it: it must move rows, not change them
            with parsed(output.where):
                rewrites = rewrites_that_changed_rows(commits, output.change_of, output.unit)
        except TableCorrupt as corrupt:  # a table before or after a rewrite names a file that is gone
            self._corrupted(corrupt)
            rewrites = None
        verdict = check.verdict(read, incomplete)
        if self.corrupt is not None:
            verdict = with_corrupt_table(verdict, self.corrupt)
        if state or output.keyed:  # a key's row set again is judged by what the commit changed
            verdict = self._with_repeats(verdict, commits, running, output)
        else:
            verdict = self._with_commit_history(verdict, commits, running, output.unit)
        verdict = with_anomaly(verdict, rewrites)
        # objects written twice: recorded by the gate for a table on S3 only, read back where there is a
        # verdict to explain (the history holds every send: not parsed again for nothing)
        again = (overwrites(read_history(self.history.path, ("scenario.start", "s3.overwrite")))
                 if self.s3 and (read.rewritten or verdict.anomalies) else {})
        verdict = with_rewritten_files(verdict, read.rewritten, again.get)
        if commits and verdict.anomalies and self.identity is not None and not state:
            self._explain_by_commits(verdict, read, output, commits, running, self.identity, again)
        return verdict

    def _corrupted(self, corrupt: TableCorrupt) -> None:
        """Record the first file found gone (or that cannot be parsed, and why), with the fault before it."""
        if self.corrupt is None:
            effects = read_history(self.history.path, ("effect",))
            self.corrupt = self.history.record("table.corrupt", where=corrupt.where, missing=corrupt.missing,
                                               after=effects[-1]["fault"] if effects else None,
                                               **({"error": corrupt.error} if corrupt.error else {}))

    def _with_commit_history(self, verdict: Verdict, commits: list[Commit], running: dict[int, int],
                             unit: str) -> Verdict:
        """The verdict with what the store's own history shows (harness.checker.commits): a batch
        committed twice, its versions named; a version's batch is the one it names, else the one Spark ran
        when it committed (`running`: version -> batch, from harness.run.table_watch)."""
        if not commits:
            return verdict
        self._record_history(commits, unit)
        return with_commit_history(verdict, batches_committed_twice(commits, running, unit))

    def _with_repeats(self, verdict: Verdict, commits: list[Commit], running: dict[int, int],
                      output: Output) -> Verdict:
        """A state table's verdict with what its history shows (harness.checker.repeats): a batch applied
        twice is an anomaly naming its versions and the keys it changed again, each `wrong_value` of such
        a key explained by them; a batch committed again without changing a row is said, not blamed."""
        if not commits:
            return verdict
        self._record_history(commits, output.unit)
        found = repeats(commits, running, output.change_of, output.unit)
        for repeat in found.idempotent:
            self.history.record("table.repeat", **repeat)
        for example in verdict.anomalies.get("wrong_value", Anomaly("wrong_value")).examples:
            if example.get("key") in found.by_key:
                example["explanation"] = found.by_key[example["key"]]
        verdict = with_commit_history(verdict, found.applied_twice if found.applied_twice.count else None)
        return with_idempotent_repeats(verdict, found)

    def _record_history(self, commits: list[Commit], unit: str) -> None:
        self.history.record("table.history", unit=unit,
                            versions=[{"version": c.version, "batch": c.batch, "app_id": c.app_id,
                                       "operation": c.operation, "rows": c.rows, "repeats": c.repeats,
                                       **({"rewrite": True} if c.rewrite else {})}
                                      for c in commits])

    def _explain_by_commits(self, verdict: Verdict, read: ReadResult, output: Output, commits: list[Commit],
                            running: dict[int, int], identity: Callable[[bytes], str], again: dict[str, str]) -> None:
        """Each duplicate example of a table output explained by the versions that hold its copies (and a
        data file of theirs the S3 server wrote twice: `again`, harness.run.explain.overwrites); one that cannot
        be explained is said on the console, never the verdict's concern."""
        batches = {**{c.version: c.batch for c in commits if c.batch is not None}, **running}
        try:
            explain_by_commits(verdict, read.records, map(partial(identity_or_none, identity), read.records.values),
                               output.commit_of, batches, output.unit,
                               lambda partition: again.get(output.file_of(partition) or ""))
        except Exception as error:  # noqa: BLE001 - an explanation is extra: the verdict stands without it
            say(f"{self.name}: the anomalies could not be explained ({type(error).__name__}: {error})")


def with_corrupt_table(verdict: Verdict, corrupt: dict) -> Verdict:
    """A verdict failed for a table that cannot be read: the missing file, and the fault before it, its
    example (what was read, nothing, is not judged record by record)."""
    anomaly = Anomaly("table_corrupt")
    anomaly.add({"where": corrupt["where"], "missing": corrupt["missing"], "after": corrupt["after"],
                 **({"error": corrupt["error"]} if corrupt.get("error") else {})})
    return Verdict(FAIL, NONE, {"table_corrupt": anomaly}, verdict.expected, 0, 0, None, verdict.oracle)
