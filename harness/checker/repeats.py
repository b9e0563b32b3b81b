"""A state table's batch committed twice, told apart by what the later commit did to the table: an
idempotent repeat changed no row (the MERGE or upsert set every key to what it already held: the table is
right, effectively-once), a double application changed rows again (a MERGE or upsert that adds applied
the batch's sums twice: `batch_committed_twice`, its commits and the keys it changed named). What each
commit changed is the store's evidence (the table as of a Delta version and the one before it; a
PostgreSQL transaction's rows in the harness's change log); the rows alone show only the result.

A later commit applies its batch again only where it changes a key an earlier commit of the batch wrote:
a batch a store commits in parts (one transaction per partition, each writing other keys) is not
applied twice for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from harness.checker.commits import NAME, batches_of
from harness.checker.state_table import key_of_bytes, shown_value
from harness.checker.verdict import EFFECTIVELY_ONCE, PASS, Anomaly, Verdict
from harness.output.commits import Commit

State = Mapping[bytes | None, list[bytes | None]]  # key -> its rows' values, as of one version
CHANGES_SHOWN = 5  # keys a double application's example names


def changed(before: State, after: State) -> dict[bytes | None, tuple[list[bytes | None], list[bytes | None]]]:
    """The keys whose rows differ between two versions of a table, with their values before and after."""
    return {key: (before.get(key, []), after.get(key, [])) for key in before.keys() | after.keys()
            if sorted(before.get(key, []), key=repr) != sorted(after.get(key, []), key=repr)}


@dataclass
class Repeats:
    """A state table's batches committed more than once: those applied again (an anomaly) and the
    idempotent repeats (each said, none wrong); `by_key`: for each key a double application changed,
    the explanation its `wrong_value` example takes."""

    applied_twice: Anomaly = field(default_factory=lambda: Anomaly(NAME))
    idempotent: list[dict] = field(default_factory=list)
    by_key: dict[str, str] = field(default_factory=dict)


def repeats(commits: Iterable[Commit], running: Mapping[int, int], change_of: Callable[[int], tuple[State, State]],
            unit: str = "table version") -> Repeats:
    """Each batch held by several commits, each later commit judged by what it changed (`change_of`: the
    table before and after a commit, harness.output.base.Output.change_of) of the keys the batch's earlier
    commits wrote. `unit`: what a commit is, in explanations (a table version, a transaction)."""
    found = Repeats()
    by_batch, _ = batches_of(commits, running)
    for batch, held in sorted(by_batch.items()):
        if len(held) < 2:
            continue
        versions = [c.version for c in held]
        effects = {c.version: change_of(c.version) for c in held}
        again = {}
        for n, commit in enumerate(held[1:], start=1):
            written = set().union(*(effects[c.version][0].keys() | effects[c.version][1].keys() for c in held[:n]))
            keys = {k: v for k, v in changed(*effects[commit.version]).items() if k in written}
            if keys:
                again[commit.version] = keys
        if not again:
            if not any(changed(*effects[c.version]) for c in held[1:]):
                found.idempotent.append({
                    "batch": batch, "versions": versions,
                    "explanation": f"batch {batch} was committed again in {unit}"
                                   f"{'s' if len(versions) > 2 else ''} {', '.join(map(str, versions[1:]))} (first in "
                                   f"{versions[0]}) without changing any row: an idempotent repeat"})
            continue
        version, keys = next(iter(again.items()))
        shown = [{"key": shown_value(k), "before": _rows(b), "after": _rows(a)}
                 for k, (b, a) in sorted(keys.items(), key=lambda item: repr(item[0]))[:CHANGES_SHOWN]]
        first = shown[0]
        times = "twice" if len(versions) == 2 else f"{len(versions)} times"
        explanation = (f"batch {batch} was applied {times}: {unit}s {', '.join(map(str, versions))}; "
                       f"{unit} {version} changed {len(keys)} key{'s' if len(keys) != 1 else ''} again "
                       f"(e.g. key {first['key']}: {first['before']} -> {first['after']})")
        found.applied_twice.add({"batch": batch, "versions": versions, "changed_again": shown,
                                 "keys_changed_again": len(keys), "explanation": explanation}, len(versions) - 1)
        for key in keys:
            found.by_key.setdefault(key_of_bytes(key), f"batch {batch} was applied {times}: {unit}s "
                                          f"{', '.join(map(str, versions))}; {unit} {version} changed this key again")
    return found


def _rows(values: list[bytes | None]) -> object:
    """A key's rows as an example shows them: its one value, `no row`, or the values of several rows."""
    if not values:
        return "no row"
    return shown_value(values[0]) if len(values) == 1 else [shown_value(v) for v in values]


def with_idempotent_repeats(verdict: Verdict, found: Repeats) -> Verdict:
    """A passing state table whose history holds idempotent repeats only: right for every reader of the
    table, and named effectively-once (a reader of its change history sees the repeat)."""
    if found.idempotent and verdict.outcome == PASS and not found.applied_twice.count:
        verdict.guarantee = EFFECTIVELY_ONCE
    return verdict
