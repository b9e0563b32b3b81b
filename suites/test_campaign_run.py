"""`eo-harness campaign` end to end: a known-bad table sink on one release, twice into one findings folder.
The first campaign writes each anomaly once with its evidence and the command that replays it; the second
adds no entry and counts each sighting again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.explore.findings import INDEX, PAGE, FindingsIndex
from harness.explore.shrink import Replay

pytestmark = pytest.mark.chaos
CAMPAIGN = ["campaign", "--outputs", "delta", "--sinks", "bad_delta_blind_append", "--releases", "1",
            "--budget", "5m", "--records", "3000"]


def test_a_campaign_writes_each_finding_once_and_a_second_one_counts_it_again(tmp_path: Path) -> None:
    folder = tmp_path / "campaign"
    assert main([*CAMPAIGN, "--findings", str(folder)]) == 1  # a scenario failed

    first = {f.key: f for f in FindingsIndex(folder).findings()}
    assert first, (folder / PAGE).read_text()
    assert {f.sink for f in first.values()} == {"bad_delta_blind_append"}
    assert "duplicate" in {f.kind for f in first.values()}, list(first)
    for finding in first.values():
        kept = folder / finding.evidence
        assert {p.name for p in kept.iterdir()} >= {"result.json", "index.html", "history.jsonl"}, finding
        history = [json.loads(line) for line in (kept / "history.jsonl").read_text().splitlines()]
        assert history and not [e for e in history if e["type"] == "send"]
        assert Replay.from_report(kept).faults, finding  # what `shrink` replays
        assert f"eo-harness shrink {kept}" in (folder / PAGE).read_text()

    assert main([*CAMPAIGN, "--findings", str(folder)]) in (0, 1)
    second = {f.key: f for f in FindingsIndex(folder).findings()}
    assert set(second) >= set(first)
    assert len(json.loads((folder / INDEX).read_text())["findings"]) == len(second)  # one entry a key
    seen_again = [key for key in first if second[key].seen > first[key].seen]
    new = set(second) - set(first)
    assert seen_again or new, "the second campaign neither saw a finding again nor found one"
    assert not new & set(first)
