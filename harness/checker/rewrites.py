"""`rewrite_changed_rows`: a commit the format records as only moving rows (Delta's OPTIMIZE, Iceberg's
`replace`, Hudi's clustering or compaction, Paimon's COMPACT) that left the table with other rows than it
found. A rewrite writes no batch, so it is never a second commit of one (harness.checker.commits); but a
rewrite that drops or doubles rows is the sink's anomaly, named with the commit, whatever the final rows
then show."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from harness.checker.ledger import shown
from harness.checker.verdict import Anomaly
from harness.output.commits import Commit

NAME = "rewrite_changed_rows"
State = Mapping[bytes | None, list[bytes | None]]  # key -> its rows' values, as of one commit
SHOWN = 5  # rows an example names of those dropped and of those added


def _rows(state: State) -> Counter[tuple[bytes | None, bytes | None]]:
    return Counter((key, value) for key, values in state.items() for value in values)


def _show(content: tuple[bytes | None, bytes | None]) -> dict:
    key, value = content
    return {"key": None if key is None else shown(key), "value": None if value is None else shown(value)}


def rewrites_that_changed_rows(commits: Iterable[Commit], change_of: Callable[[int], tuple[State, State]],
                               unit: str) -> Anomaly | None:
    """Each rewrite whose table after it holds other rows than before it (`change_of`: the table before and
    after a commit, harness.output.base.Output.change_of), with the rows it dropped and those it added."""
    anomaly = Anomaly(NAME)
    for commit in commits:
        if not commit.rewrite:
            continue
        before, after = map(_rows, change_of(commit.version))
        dropped, added = before - after, after - before
        if not dropped and not added:
            continue
        anomaly.add({"version": commit.version, "operation": commit.operation,
                     "rows_before": sum(before.values()), "rows_after": sum(after.values()),
                     "dropped": [_show(c) for c in list(dropped)[:SHOWN]],
                     "added": [_show(c) for c in list(added)[:SHOWN]],
                     "explanation": f"{unit} {commit.version} ({commit.operation or 'a rewrite'}) only moves rows by "
                                    f"its own record, yet dropped {sum(dropped.values())} and added "
                                    f"{sum(added.values())}"}, weight=sum(dropped.values()) + sum(added.values()))
    return anomaly if anomaly.count else None

