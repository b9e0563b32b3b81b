"""The coverage store: every combination tried on a sink and pipeline, with its outcome, across runs.

One SQLite file in the reports folder. A subject is the pair's source hashes, so that a changed sink
starts afresh while each `explore` of the same code widens the last; workers of one explore (other
processes) write to the same file, SQLite's lock serialising them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from harness.checker.verdict import PASS

FILE = "coverage.sqlite"
CLAIM_EXPIRES_S = 3600.0  # a claim older than this is a worker that died mid-scenario: the combination is free
SCHEMA = """
create table if not exists tried (
    subject text not null,      -- sink and pipeline, by their source hashes
    combination text not null,  -- Combination.key
    classes text not null,      -- JSON list of the fault classes it touched
    outcome text not null,      -- pass, fail, ineffective, unknown (the one judge's)
    anomalies text not null,    -- JSON {name: count}
    seconds real not null,
    report text not null,       -- the scenario's report folder
    at real not null
);
create table if not exists claimed (  -- combinations a worker is running now
    subject text not null,
    combination text not null,
    worker text not null,
    at real not null,
    primary key (subject, combination)
)
"""


@dataclass(frozen=True)
class Covered:
    """What a subject has been tried under: classes and combinations that ran to a verdict."""

    classes: frozenset[str]
    combinations: int
    runs: int
    failures: int


class CoverageStore:
    """Reads and adds tried combinations; each call opens the file, so processes can share it."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / FILE
        with closing(self._connect()) as db, db:
            db.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def add(self, subject: str, combination: str, classes: tuple[str, ...], outcome: str,
            anomalies: dict[str, int], seconds: float, report: str) -> None:
        """Record a combination's run, and free its claim."""
        with closing(self._connect()) as db, db:
            db.execute("insert into tried values (?, ?, ?, ?, ?, ?, ?, ?)",
                       (subject, combination, json.dumps(list(classes)), outcome, json.dumps(anomalies),
                        seconds, report, time.time()))
            db.execute("delete from claimed where subject = ? and combination = ?", (subject, combination))

    def claim(self, subject: str, ordered: list[str], worker: str) -> str | None:
        """The first of `ordered` no other worker is running, claimed for `worker` (None: all are running)."""
        with closing(self._connect()) as db, db:
            db.execute("begin immediate")  # one claimer at a time across processes
            fresh = time.time() - CLAIM_EXPIRES_S
            running = {row[0] for row in db.execute(
                "select combination from claimed where subject = ? and at > ?", (subject, fresh))}
            for combination in ordered:
                if combination not in running:
                    db.execute("insert or replace into claimed values (?, ?, ?, ?)",
                               (subject, combination, worker, time.time()))
                    return combination
        return None

    def tried(self, subject: str) -> Counter[str]:
        """How often each combination ran to a verdict (pass or fail) on this subject."""
        with closing(self._connect()) as db:
            rows = db.execute("select combination, count(*) from tried where subject = ? and outcome in "
                              "('pass', 'fail') group by combination", (subject,)).fetchall()
        return Counter(dict(rows))

    def covered(self, subject: str) -> Covered:
        with closing(self._connect()) as db:
            rows = db.execute("select combination, classes, outcome from tried where subject = ?",
                              (subject,)).fetchall()
        judged = [(c, json.loads(k), o) for c, k, o in rows if o in (PASS, "fail")]
        return Covered(frozenset(name for _, names, _ in judged for name in names),
                       len({c for c, _, _ in judged}), len(rows), sum(o == "fail" for _, _, o in judged))

    def failures(self, subject: str, before: float) -> list[tuple[str, str, str]]:
        """(combination, anomalies, report) of each failing run that ended before `before` (a time.time()),
        oldest first: what earlier explores of this code found."""
        with closing(self._connect()) as db:
            return db.execute("select combination, anomalies, report from tried where subject = ? and "
                              "outcome = 'fail' and at < ? order by at", (subject, before)).fetchall()
