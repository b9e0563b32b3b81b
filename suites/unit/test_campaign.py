"""The campaign's plan and its findings index: each anomaly once per kind, sink, output, store and release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import versions
from harness.cli import parser
from harness.errors import BadInput
from harness.explore.campaign import Cell, check_budget, plan, reference_sinks, releases
from harness.explore.findings import INDEX, PAGE, FindingsIndex, finding_key
from harness.explore.shrink import Replay

pytestmark = pytest.mark.unit

VERSIONS = {"kafka": "4.1.1", "spark": "4.0.0", "iceberg": "1.11.0"}


def scenario(folder: Path, anomalies: dict[str, int], versions_: dict[str, str] = VERSIONS) -> Path:
    """A failing scenario's report folder as a scenario writes it: its result, page and history."""
    folder.mkdir(parents=True)
    verdict = {"outcome": "fail", "anomalies": {k: {"count": n, "examples": []} for k, n in anomalies.items()}}
    (folder / "result.json").write_text(json.dumps({"verdict": verdict, "versions": versions_}))
    (folder / "index.html").write_text("<html></html>")
    start = {"t": 1.0, "type": "scenario.start", "pipeline": "p", "sink": "iceberg_streaming",
             "faults": ["kill:driver"],
             "workload": {"records": 4000, "seed": 1}, "partitions": 4, "max_offsets_per_trigger": 1000, "rate": 0.0,
             "state_store": "hdfs", "speculation": False, "output": "iceberg"}
    lines = [start] + [{"t": 2.0, "type": "send", "id": str(i)} for i in range(50)] + [{"t": 3.0, "type": "trigger"}]
    (folder / "history.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in lines))
    return folder


def test_each_anomaly_kind_is_written_once_and_a_second_sighting_counts(tmp_path: Path) -> None:
    index = FindingsIndex(tmp_path / "findings")
    first = index.add("iceberg_streaming", "iceberg", "s3", "kill:driver", scenario(tmp_path / "a", {"duplicate": 3,
                                                                                                       "lost": 2}))
    assert sorted(f.kind for f in first) == ["duplicate", "lost"]
    again = index.add("iceberg_streaming", "iceberg", "s3", "kill:sender", scenario(tmp_path / "b", {"duplicate": 1}))
    assert again == []
    found = {f.kind: f for f in index.findings()}
    assert len(found) == 2 and found["duplicate"].seen == 2 and found["lost"].seen == 1
    assert found["duplicate"].combination == "kill:driver"  # the first to show it stays its example
    assert found["duplicate"].count == 3
    assert found["duplicate"].evidence == found["lost"].evidence  # one scenario's evidence, kept once


def test_the_same_kind_on_another_release_store_or_sink_is_another_finding(tmp_path: Path) -> None:
    index = FindingsIndex(tmp_path / "findings")
    index.add("iceberg_streaming", "iceberg", "s3", "x", scenario(tmp_path / "a", {"duplicate": 1}))
    older = {**VERSIONS, "iceberg": "1.10.1"}
    assert len(index.add("iceberg_streaming", "iceberg", "s3", "x", scenario(tmp_path / "b", {"duplicate": 1},
                                                                             older))) == 1
    on_volume = scenario(tmp_path / "c", {"duplicate": 1})
    assert len(index.add("iceberg_streaming", "iceberg", "volume", "x", on_volume)) == 1
    assert len(index.add("other", "iceberg", "s3", "x", scenario(tmp_path / "d", {"duplicate": 1}))) == 1
    assert len(index.findings()) == 4
    assert finding_key("duplicate", "s", "o", "volume", {"b": "2", "a": "1"}) == \
        finding_key("duplicate", "s", "o", "volume", {"a": "1", "b": "2"})


def test_the_judge_s_own_anomaly_is_no_finding(tmp_path: Path) -> None:
    """A fault that never fired says nothing of the sink."""
    index = FindingsIndex(tmp_path / "findings")
    assert index.add("s", "delta", "volume", "x", scenario(tmp_path / "a", {"vacuous": 1})) == []


def test_a_finding_keeps_evidence_shrink_can_replay_without_the_sends(tmp_path: Path) -> None:
    index = FindingsIndex(tmp_path / "findings")
    (finding,) = index.add("iceberg_streaming", "iceberg", "volume", "kill:driver",
                           scenario(tmp_path / "a", {"lost": 5}))
    kept = tmp_path / "findings" / finding.evidence
    assert (kept / "result.json").is_file() and (kept / "index.html").is_file()
    history = (kept / "history.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in history] == ["scenario.start", "trigger"]
    assert Replay.from_report(kept).faults == ("kill:driver",)
    page = (tmp_path / "findings" / PAGE).read_text()
    assert f"eo-harness shrink {kept}" in page and "| lost | iceberg_streaming | iceberg on volume |" in page


def test_a_cell_without_a_result_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert FindingsIndex(tmp_path / "f").add("s", "delta", "volume", "x", tmp_path / "a") == []
    assert not (tmp_path / "f" / INDEX).exists()


def test_an_index_with_nothing_found_says_so(tmp_path: Path) -> None:
    FindingsIndex(tmp_path / "f").write()
    assert "0 findings" in (tmp_path / "f" / PAGE).read_text()
    assert json.loads((tmp_path / "f" / INDEX).read_text()) == {"findings": []}


def test_markup_in_a_sink_s_name_stays_in_its_cell(tmp_path: Path) -> None:
    index = FindingsIndex(tmp_path / "findings")
    index.add("a|b\nc", "delta", "volume", "x", scenario(tmp_path / "a", {"lost": 1}))
    row = [line for line in (tmp_path / "findings" / PAGE).read_text().splitlines() if "lost" in line][0]
    assert "a\\|b c" in row


def test_the_plan_crosses_outputs_stores_sinks_and_releases() -> None:
    cells = plan(["delta", "iceberg"], ["volume", "s3"], ["delta_streaming", "iceberg_streaming"], 2)
    assert Cell("delta_streaming", "delta", "s3", versions.SPARK_VERSIONS[1]) in cells
    icebergs = [c for c in cells if c.output == "iceberg" and c.store == "volume"]
    line = versions.Stack("", versions.SPARK_VERSIONS[0]).line
    assert [c.iceberg for c in icebergs] == list(versions.ICEBERG_VERSIONS[line][:2])
    assert len(cells) == 8


def test_a_kafka_cell_has_no_store_and_tables_take_their_reference_sinks() -> None:
    assert [c.store for c in plan(["kafka"], ["volume", "s3"], ["transactional"], 1)] == ["volume"]
    sinks = reference_sinks("delta")
    assert "delta_streaming" in sinks and not any(s.startswith("bad_") for s in sinks)
    assert {c.sink for c in plan(["delta"], ["volume"], [], 1)} == set(sinks)


def test_an_output_runs_only_on_the_releases_it_supports() -> None:
    assert {s.line for s in releases("paimon", "volume")} == {"3.5"}
    assert len(releases("iceberg", "volume")) == sum(len(v) for v in versions.ICEBERG_VERSIONS.values())


def test_a_row_s_evidence_is_its_scenario_s_folder(tmp_path: Path) -> None:
    """A row's report is the scenario's page: the findings keep the folder it is in."""
    from harness.certify.matrix import MatrixScenario
    from harness.certify.rows import Row
    from harness.explore.campaign import scenario_folder

    row = Row(MatrixScenario("x", ()), "fail", {"lost": 1}, 1.0, "explore-x/index.html")
    assert scenario_folder(tmp_path, row) == tmp_path / "explore-x"


def test_bad_campaigns_are_refused() -> None:
    with pytest.raises(BadInput, match="no output 'nope'"):
        plan(["nope"], ["volume"], [], 1)
    with pytest.raises(BadInput, match="no cell"):
        plan(["delta"], ["volume"], ["transactional"], 1)
    with pytest.raises(BadInput, match="at least 9 min"):
        check_budget(plan(["delta"], ["volume"], ["delta_streaming"], 3), 120.0)


def test_the_dry_run_says_the_cells_and_runs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    args = parser().parse_args(["campaign", "--outputs", "delta", "--sinks", "delta_streaming", "--releases", "2",
                                "--budget", "12m", "--shard", "2/2", "--dry-run"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 cell, 12 min") and f"delta_streaming into delta on volume, Spark " \
        f"{versions.SPARK_VERSIONS[1]}" in out
