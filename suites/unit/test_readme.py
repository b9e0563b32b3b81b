"""The README's facts that the code can state, checked against the code: its length, the class counts
per kind of sink, the quick matrix's size and line, which known-bad sinks the quick matrix catches, its
links; and no diary or measurement history in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.catalog import sinks
from harness.certify.certificate import verdict
from harness.certify.matrix import BASELINE, rows_for
from harness.faults.glossary import parse_steps
from harness.faults.space import MIN_BROKERS, Observation, space
from harness.faults.spec import PLAIN, TABLE, TRANSACTIONAL
from harness.reference_docs import class_counts

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
GUIDE = (REPO / "docs" / "guides" / "your-sink.md").read_text()
CATCHES = re.compile(r"^\| `(bad_\w+)` \| (.+) \|$", re.M)


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 250


def test_the_class_counts_are_the_fault_space_s() -> None:
    counts = class_counts()
    transactional, plain = counts[(TRANSACTIONAL, False, MIN_BROKERS)], counts[(PLAIN, False, MIN_BROKERS)]
    on_one = counts[(TRANSACTIONAL, False, 1)]
    assert "stateless pipeline, 31\nclasses (25 of them on one broker, the other 6 need three brokers)" in README
    assert (transactional[0], on_one[0], on_one[1], transactional[0] - on_one[1]) == (31, 31, 25, 6)
    assert "sink,\n15." in README and plain[0] == 15


def test_the_quick_matrix_and_its_line_are_what_the_code_runs() -> None:
    seen = Observation.assumed(TRANSACTIONAL, stateful=False, brokers=1)
    quick = [BASELINE, *rows_for(seen, quick=True)]
    assert "the covering subset of 7 scenarios on one broker" in README and len(quick) == 7
    line = verdict([{"outcome": "pass" if i < len(quick) - 1 else "not tried"} for i in range(31)], [], quick=True)
    assert line == "quick: passed 6 of 31 applicable fault classes (not a certification)"
    assert f"passthrough: {line}, 7/7 scenarios passed, quick matrix" in README


@pytest.mark.parametrize("text", [README, GUIDE], ids=["README", "your-sink guide"])
def test_what_catches_each_known_bad_sink_is_what_the_quick_matrix_runs(text: str) -> None:
    """A row said to be quick is in the quick matrix (on one broker, or on three where it says so); a row
    said not to be is not; every known-bad sink of the catalog is listed."""
    table = dict(CATCHES.findall(text))
    catalog = {p.stem for p in Path(sinks.__file__).parent.glob("bad_*.py")}
    assert set(table) == catalog, "list every known-bad sink of the catalog, with what catches it"
    for sink, says in table.items():
        rows = re.findall(r"`([a-z][\w.-]+-[\w.-]+)`", says)
        for row in rows:
            kind = PLAIN if row.endswith("produce") else TABLE if "table." in row else TRANSACTIONAL
            quick_on = {n: {r.name for r in rows_for(Observation.assumed(kind, False, n), quick=True)}
                        for n in (1, MIN_BROKERS)}
            if says.startswith("quick:"):
                assert row in quick_on[1], (sink, row)
            elif says.startswith("not the quick matrix on 1 broker"):
                assert row not in quick_on[1] and row in quick_on[MIN_BROKERS], (sink, row)
        if says.startswith("no certificate row"):
            assert "explore" in says and not rows, sink


def test_the_ci_example_s_fault_is_at_a_point_the_readme_s_sink_reaches() -> None:
    """The README's sink is Spark's plain Kafka write (no transactions): a fault its CI example gives at a
    point only a transactional sink reaches would never fire, a vacuous test."""
    sink = README.split("# my_sink.py\n", 1)[1].split("```", 1)[0]
    assert 'format("kafka")' in sink and "transactional" not in sink
    example = re.search(r"eo_scenario\(.*?faults=\[(.*?)\]", README, re.S)
    assert example, "the README's eo_scenario example"
    steps = parse_steps(re.findall(r'"([^"]+)"', example[1]))
    plain = {step.point for c in space(Observation.assumed(PLAIN, False, 1)) for step in parse_steps(list(c.faults))}
    assert steps and {step.point for step in steps} <= plain, (steps, plain)


def test_the_readme_has_no_diary_and_links_only_to_what_exists() -> None:
    for diary in ("this session", "before the cut", "the batch cut", "earlier session", "goal",
                  "pip install eo-harness"):
        assert diary not in README.lower(), diary
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        if not link.startswith("http"):
            assert (REPO / link).exists(), link
