"""`certify --shard K/N` and `certify merge DIR...`: the shares of a plan, the shard's certificate, and
merges of hand-made shard certificates (no Docker): the merged certificate is what one run would have
written, and shards of another certification, a missing or duplicated shard, or baselines that showed
different fault spaces are refused in one line with exit status 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.certify.certificate import write_certificate
from harness.certify.matrix import BASELINE, MatrixScenario, rows_for
from harness.certify.merge import merge, merged_certificate, read_shard
from harness.certify.rows import Row
from harness.certify.shards import Shard
from harness.errors import BadInput
from harness.faults.space import Observation
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
SEEN = Observation.from_events([
    {"type": "point", "point": "txn.init", "role": "executors", "transaction_timeout_ms": 60_000},
    *[{"type": "point", "point": p, "role": "executors"} for p in ("txn.first_write", "txn.pre_commit", "txn.commit")],
], stateful=False, brokers=3)  # every class tried: a run of the whole plan certifies
PLAN = rows_for(SEEN, quick=False)
WORKLOAD = {"records": 20000, "rate": 2000.0, "stall_timeout": 180.0}


def test_shares_are_disjoint_in_plan_order_and_their_union_is_the_plan() -> None:
    plan = list(range(11))
    shares = [Shard(k, 4).share(plan) for k in range(1, 5)]
    assert shares == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7]]
    assert sorted(sum(shares, [])) == plan
    assert Shard(1, 1).share(plan) == plan and Shard(3, 3).share([0, 1]) == []


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "2/0", "a/b", "-1/3", "1/4/2"])
def test_a_bad_shard_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput, match="write K/N"):
        Shard.parse(text)


def test_an_observation_survives_json() -> None:
    assert Observation.from_dict(json.loads(json.dumps(SEEN.to_dict()))) == SEEN


def rows_of(plan: list[MatrixScenario], report_root: str, failing: str = "") -> list[Row]:
    """Rows that pass (`failing` fails with duplicates), each with a report under `report_root`."""
    return [Row(row, "fail" if row.name == failing else "pass", {"duplicate": 3} if row.name == failing else {},
                42.0, f"{report_root}/{row.name}/index.html") for row in plan]


def write_shard(folder: Path, k: int, n: int, seen: Observation = SEEN, failing: str = "",
                **changed: object) -> Path:
    """Shard k/n's certificate as `certify --shard k/n --out folder` writes it, its reports beside it in
    `folder/../run-k/` (files made), then `changed` written over certificate.json's keys."""
    plan = [BASELINE, *Shard(k, n).share(rows_for(seen, quick=False))]
    for row in plan:
        page = folder.parent / f"run-{k}" / row.name / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"report of {row.name} in shard {k}")
    shard = {"index": k, "count": n, "observation": seen.to_dict(), "workload": WORKLOAD}
    write_certificate(folder, resolve_sink("transactional"), load_pipeline("passthrough"), seen, False, 1,
                      rows_of(plan, f"../run-{k}", failing), 3, shard)
    if changed:
        path = folder / "certificate.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changed}))
    return folder


def shards(tmp_path: Path, n: int, failing: str = "") -> list[Path]:
    return [write_shard(tmp_path / f"shard-{k}" / "certificate", k, n, failing=failing) for k in range(1, n + 1)]


def single_run(tmp_path: Path, failing: str = "") -> dict:
    """The certificate one run of the whole plan writes."""
    return write_certificate(tmp_path / "single", resolve_sink("transactional"), load_pipeline("passthrough"), SEEN,
                             False, 1, rows_of([BASELINE, *PLAN], "../run", failing), 3)


def test_a_shard_certifies_nothing_alone_and_says_what_to_do(tmp_path: Path) -> None:
    folder = write_shard(tmp_path / "shard", 1, 1)  # even a shard that ran every row
    certificate = json.loads((folder / "certificate.json").read_text())
    assert certificate["certified"] is False
    assert certificate["verdict"].startswith("shard 1/1 of the full matrix: ") and "certify merge" in \
        certificate["verdict"]
    assert certificate["shard"] == {"index": 1, "count": 1, "observation": SEEN.to_dict(), "workload": WORKLOAD}


@pytest.mark.parametrize("failing", ["", "kill-driver-txn.pre_commit"])
def test_the_merge_is_what_one_run_would_have_written(tmp_path: Path, failing: str) -> None:
    out = tmp_path / "merged"
    status = merge(list(reversed(shards(tmp_path, 4, failing))), out)  # any order of folders
    merged = json.loads((out / "certificate.json").read_text())
    single = single_run(tmp_path, failing)
    for key in ("classes", "verdict", "certified", "sink", "sink_source_sha256", "pipeline_source_sha256", "matrix",
                "seed", "restarts", "brokers", "versions", "shipped", "sink_kind", "transaction_timeout_s"):
        assert merged[key] == single[key], key
    assert (status, merged["certified"]) == ((1, False) if failing else (0, True))
    assert "shard" not in merged and [m["shard"] for m in merged["merged_from"]] == ["1/4", "2/4", "3/4", "4/4"]
    names = [s["name"] for s in merged["scenarios"]]
    assert names == ["baseline", "baseline-shard-2-of-4", "baseline-shard-3-of-4", "baseline-shard-4-of-4",
                     *[row.name for row in PLAN]]
    for scenario in merged["scenarios"]:  # every report link works from the merged folder, to its shard's report
        k = scenario["shard"].split("/")[0]
        assert (out / scenario["report"]).read_text().endswith(f"in shard {k}")
    junit = (out / "junit.xml").read_text()
    assert junit.count("<testcase") == len(names) and f'failures="{1 if failing else 0}"' in junit
    assert "(shard 2/4)</td>" in (out / "index.html").read_text()


def test_a_failed_baseline_of_any_shard_fails_the_merge(tmp_path: Path) -> None:
    folders = [write_shard(tmp_path / "s1", 1, 2), write_shard(tmp_path / "s2", 2, 2, failing="baseline")]
    merged = merged_certificate([read_shard(f) for f in folders], tmp_path / "merged")
    assert merged["certified"] is False and merged["verdict"].startswith("not certified (")
    assert [s["outcome"] for s in merged["scenarios"] if s["name"] == "baseline-shard-2-of-2"] == ["fail"]


@pytest.mark.parametrize("key, value, words", [
    ("sink_source_sha256", "0" * 64, "sink source (sha256)"),
    ("pipeline_source_sha256", "1" * 64, "pipeline source (sha256)"),
    ("shipped", {"sink": {"name": "other.py", "sha256": "2" * 64, "files": {}}}, "shipped code"),
    ("versions", {"harness": "0.0.1", "kafka": "3.9.1", "spark": "4.0.0", "confluent_kafka": "2.16.1"}, "versions"),
    ("seed", 7, "seed"),
    ("brokers", 1, "brokers"),
    ("matrix", "quick", "matrix (quick or full)"),
    ("restarts", 0, "restarts"),
])
def test_shards_of_another_certification_are_refused(tmp_path: Path, key: str, value: object, words: str) -> None:
    first = write_shard(tmp_path / "s1", 1, 2)
    other = write_shard(tmp_path / "s2", 2, 2, **{key: value})
    with pytest.raises(BadInput, match=f"^the shards differ in their {re.escape(words)}:"):
        merged_certificate([read_shard(first), read_shard(other)], tmp_path / "merged")


def test_a_shard_of_another_sink_is_refused_naming_both_sinks(tmp_path: Path) -> None:
    first = write_shard(tmp_path / "s1", 1, 2)
    other = write_shard(tmp_path / "s2", 2, 2, sink="builtin_kafka", sink_source_sha256="0" * 64)
    sink = json.loads((first / "certificate.json").read_text())["sink"]
    with pytest.raises(BadInput, match=f"^the shards differ in their sink source \\(sha256\\): {re.escape(str(first))} "
                                       f"\\(sink {sink}\\) has \"[0-9a-f]{{64}}\", {re.escape(str(other))} \\(sink "
                                       "builtin_kafka\\) has \"0{64}\"; merge only the shards of one certification$"):
        merged_certificate([read_shard(first), read_shard(other)], tmp_path / "merged")


def test_shards_of_another_split_or_workload_are_refused(tmp_path: Path) -> None:
    first = write_shard(tmp_path / "s1", 1, 2)
    of_three = write_shard(tmp_path / "s2", 2, 3)
    with pytest.raises(BadInput, match="differ in their shard count: .* has 2, .* has 3;"):
        merged_certificate([read_shard(first), read_shard(of_three)], tmp_path / "merged")
    more = write_shard(tmp_path / "s3", 2, 2)
    certificate = json.loads((more / "certificate.json").read_text())
    certificate["shard"]["workload"]["records"] = 1000
    (more / "certificate.json").write_text(json.dumps(certificate))
    with pytest.raises(BadInput, match=r'differ in their workload: .* has \{"records": 20000\}, .* has '
                                       r'\{"records": 1000\}'):
        merged_certificate([read_shard(first), read_shard(more)], tmp_path / "merged")


def test_a_missing_or_duplicated_shard_is_refused(tmp_path: Path) -> None:
    one, two, three = shards(tmp_path, 3)
    with pytest.raises(BadInput, match="^shard 2/3 missing: give the folders of all 3 shards$"):
        merged_certificate([read_shard(one), read_shard(three)], tmp_path / "merged")
    with pytest.raises(BadInput, match=f"^shard 3/3 given twice: {three} and {three}$"):
        merged_certificate([read_shard(f) for f in (one, two, three, three)], tmp_path / "merged")


def test_baselines_that_showed_different_spaces_are_refused(tmp_path: Path) -> None:
    shorter = Observation.from_dict({**SEEN.to_dict(), "transaction_timeout_s": 20.0})
    both_roles = Observation.from_dict({**SEEN.to_dict(), "senders": {**SEEN.to_dict()["senders"],
                                                                      "txn.commit": ["driver", "executors"]}})
    first = write_shard(tmp_path / "s1", 1, 2)
    for n, seen, what in ((2, shorter, "how class .* is tried: "), (3, both_roles, "classes only the first has: ")):
        other = write_shard(tmp_path / f"s{n}", 2, 2, seen=seen)
        with pytest.raises(BadInput, match=f"^the shards' baselines showed different fault spaces: shard 1/2 and "
                                           f"shard 2/2 differ in {what}"):
            merged_certificate([read_shard(first), read_shard(other)], tmp_path / "merged")


def test_a_shard_holding_other_rows_than_its_share_is_refused(tmp_path: Path) -> None:
    first, second = shards(tmp_path, 2)
    certificate = json.loads((second / "certificate.json").read_text())
    certificate["scenarios"].pop()
    (second / "certificate.json").write_text(json.dumps(certificate))
    with pytest.raises(BadInput, match="shard 2/2 holds rows .*, not its baseline and its share of the plan"):
        merged_certificate([read_shard(first), read_shard(second)], tmp_path / "merged")


def test_a_folder_without_a_shards_certificate_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no certificate.json"):
        read_shard(tmp_path)
    single_run(tmp_path)
    with pytest.raises(BadInput, match="is not a shard's certificate"):
        read_shard(tmp_path / "single")
    folder = write_shard(tmp_path / "old", 1, 2)
    certificate = json.loads((folder / "certificate.json").read_text())
    del certificate["seed"], certificate["shard"]["workload"]
    (folder / "certificate.json").write_text(json.dumps(certificate))
    with pytest.raises(BadInput, match="a shard's certificate without seed, shard.workload \\(written by another"):
        read_shard(folder)


def test_the_command_refuses_in_one_line_with_status_2_and_merges_with_0(tmp_path: Path) -> None:
    one, two = shards(tmp_path, 2)
    other_sink = write_shard(tmp_path / "other" / "certificate", 2, 2, sink_source_sha256="f" * 64)

    def merge_command(*folders: Path, out: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", "certify", "merge", *map(str, folders), "--out",
                               str(out)], capture_output=True, text=True, cwd=REPO, timeout=60)

    refused = merge_command(one, other_sink, out=tmp_path / "refused")
    assert refused.returncode == 2 and refused.stdout == "" and len(refused.stderr.strip().splitlines()) == 1
    assert refused.stderr.startswith("harness: error: the shards differ in their sink source (sha256)")
    assert not (tmp_path / "refused").exists()
    merged = merge_command(one, two, out=tmp_path / "merged")
    assert merged.returncode == 0, merged.stderr
    assert "certified exactly-once under" in merged.stdout
    again = merge_command(one, two, out=tmp_path / "merged")  # a certificate is never overwritten
    assert again.returncode == 2 and "holds a certificate already" in again.stderr


class Attributes(HTMLParser):
    """Every attribute of every tag of a page, as a browser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(tag, name, value) for name, value in attrs]


def test_a_crafted_shard_adds_no_attribute_to_the_merged_page(tmp_path: Path) -> None:
    """A shard's certificate is a file anyone may have written: an outcome with both quotes stays the value
    of its cell's class, and adds no attribute (an onmouseover, a style) to the page the merge writes."""
    crafted = """pass' onmouseover='alert(1)" style="x"""
    folder = write_shard(tmp_path / "shard", 1, 1)
    certificate = json.loads((folder / "certificate.json").read_text())
    certificate["scenarios"][1]["outcome"] = crafted
    (folder / "certificate.json").write_text(json.dumps(certificate))
    merge([folder], tmp_path / "merged")
    page = Attributes()
    page.feed((tmp_path / "merged" / "index.html").read_text())
    assert {(tag, name) for tag, name, _ in page.found} <= {("meta", "charset"), ("td", "class"), ("a", "href")}
    assert ("td", "class", crafted) in page.found and ("td", "class", crafted.replace(" ", "-")) in page.found


@pytest.mark.parametrize(("field", "value"), [("seconds", "12"), ("anomalies", []), ("faults", [1]),
                                              ("report", None), ("outcome", True)])
def test_a_shard_row_with_a_malformed_field_is_bad_input_naming_it(tmp_path: Path, field: str, value: object) -> None:
    folder = write_shard(tmp_path / "shard", 1, 1)
    certificate = json.loads((folder / "certificate.json").read_text())
    certificate["scenarios"][1][field] = value
    (folder / "certificate.json").write_text(json.dumps(certificate))
    with pytest.raises(BadInput, match=f"scenario 1 .* has a malformed {field}"):
        merge([folder], tmp_path / "merged")


def test_a_crafted_shard_s_brokers_and_seed_are_text_on_the_merged_page(tmp_path: Path) -> None:
    markup = "<img src=x onerror=alert(1)>"
    folder = write_shard(tmp_path / "shard", 1, 1, brokers=markup, seed=markup)
    merge([folder], tmp_path / "merged")
    page = (tmp_path / "merged" / "index.html").read_text()
    assert "<img" not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 2
