"""The findings index a campaign writes: each anomaly once, by its kind and the sink, output, store and
releases it shows on, with the scenario's evidence kept beside it and the command that replays it.

One JSON file (`findings.json`) and its Markdown rendering (`findings.md`) in the campaign's folder. Shards
of one campaign on this host write to the same folder: every change is made under a lock on the index, so
a second run, or another shard, adds to an entry instead of writing it again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.evidence import write_evidence
from harness.explore.shrink import anomaly_kinds

INDEX = "findings.json"
PAGE = "findings.md"
KEPT = ("result.json", "index.html")  # a scenario's files kept whole; its history is kept without its sends
HISTORY = "history.jsonl"
HISTORY_CAP = 4 * 1024 * 1024  # a history past this (without sends) keeps its first 4 MiB: the start and faults


@dataclass
class Finding:
    """One anomaly kind on one sink, output, store and set of releases."""

    key: str
    kind: str
    sink: str
    output: str
    store: str
    versions: dict[str, str]
    combination: str  # what showed it first (the explore's combination key)
    count: int  # its anomalies in that scenario
    evidence: str  # the kept scenario folder, relative to the index
    first_seen: float
    seen: int = 1  # scenarios that showed it, over every campaign that wrote here
    status: str = "new"  # new until someone says otherwise (reported, known, fixed in X)

    @property
    def releases(self) -> str:
        return ", ".join(f"{name} {version}" for name, version in sorted(self.versions.items()))


def finding_key(kind: str, sink: str, output: str, store: str, versions: dict[str, str]) -> str:
    """What makes two anomalies the same finding: the same kind, sink, output, store and releases."""
    releases = ",".join(f"{k}={v}" for k, v in sorted(versions.items()))
    return f"{kind} | {sink} | {output} on {store} | {releases}"


class FindingsIndex:
    """The index in `folder`; `add` is safe against other processes adding at the same time."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / INDEX

    def findings(self) -> list[Finding]:
        if not self.path.is_file():
            return []
        return [Finding(**entry) for entry in json.loads(self.path.read_text())["findings"]]

    def add(self, sink: str, output: str, store: str, combination: str, scenario: Path) -> list[Finding]:
        """The failing scenario in `scenario` (its report folder): the findings it adds (its anomaly kinds
        not yet in the index), each with the folder's evidence kept; kinds already in it count one more
        sighting. A folder without a result adds nothing."""
        result_file = scenario / "result.json"
        if not result_file.is_file():
            return []
        result = json.loads(result_file.read_text())
        versions = {str(k): str(v) for k, v in (result.get("versions") or {}).items()}
        anomalies = result["verdict"]["anomalies"]
        added: list[Finding] = []
        with self._locked():
            known = {f.key: f for f in self.findings()}
            for kind in sorted(anomaly_kinds(result)):
                key = finding_key(kind, sink, output, store, versions)
                if key in known:
                    known[key].seen += 1
                    continue
                kept = self._keep(scenario)
                count = anomalies[kind].get("count", 0) if isinstance(anomalies[kind], dict) else 0
                known[key] = Finding(key, kind, sink, output, store, versions, combination, int(count),
                                     str(kept.relative_to(self.folder)), time.time())
                added.append(known[key])
            self._write(list(known.values()))
        return added

    def write(self) -> None:
        """The index and its page as they stand (a campaign that found nothing still says so)."""
        with self._locked():
            self._write(self.findings())

    def _keep(self, scenario: Path) -> Path:
        """The scenario's evidence, once however many kinds it shows (kept again, it is the same)."""
        name = hashlib.sha256(str(scenario.resolve()).encode()).hexdigest()[:12]
        return keep_evidence(scenario, self.folder / "evidence" / name)

    def _write(self, findings: list[Finding]) -> None:
        findings.sort(key=lambda f: f.first_seen)
        write_evidence(self.path, json.dumps({"findings": [asdict(f) for f in findings]}, indent=1))
        write_evidence(self.folder / PAGE, page(findings, self.folder))

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The index's lock: a file beside it, never written, held while the index is read and replaced."""
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = os.open(self.folder / f".{INDEX}.lock", os.O_RDONLY | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # its lock goes with it


def keep_evidence(scenario: Path, kept: Path) -> Path:
    """A scenario's evidence copied to `kept`: its result, its page and its history without sends (enough to
    read it and for `shrink` to replay it, small enough to keep beside a finding)."""
    for name in KEPT:
        if (scenario / name).is_file():
            write_evidence(kept / name, (scenario / name).read_bytes())
    history = scenario / HISTORY
    if history.is_file():
        write_evidence(kept / HISTORY, _without_sends(history))
    return kept


def _without_sends(history: Path) -> bytes:
    """A history's events but its per-record sends, at most HISTORY_CAP bytes of them (whole lines)."""
    kept, size = [], 0
    with history.open("rb") as lines:
        for line in lines:
            if b'"type":"send"' in line[:40]:  # harness.history writes compact JSON, the type second
                continue
            if size + len(line) > HISTORY_CAP:
                break
            kept.append(line)
            size += len(line)
    return b"".join(kept)


def page(findings: list[Finding], folder: Path) -> str:
    """The index as Markdown: a line per finding, in the order they were found."""
    lines = ["# Findings", "", f"{len(findings)} finding{'s' if len(findings) != 1 else ''}, each an anomaly kind "
             "on one sink, output, store and set of releases. Replay one with its command: `shrink` runs it "
             "again and writes the smallest version that still fails as a pytest reproducer.", ""]
    if findings:
        lines += ["| anomaly | sink | output | releases | status | seen | first shown by | reproduce |",
                  "|---|---|---|---|---|---|---|---|"]
    for f in findings:
        cells = (f.kind, f.sink, f"{f.output} on {f.store}", f.releases, f.status, str(f.seen),
                 f"`{f.combination}`", f"`eo-harness shrink {folder / f.evidence}`")
        lines.append("| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
