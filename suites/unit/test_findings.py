"""The findings' pages state what their code computes: the Iceberg finding's table of runs gives, for each
input topic, the order its own function predicts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ICEBERG = Path(__file__).resolve().parents[2] / "docs" / "findings" / \
    "iceberg-streaming-replay-overwrites-a-committed-file.md"


def test_the_iceberg_finding_s_orders_are_its_function_s() -> None:
    text = ICEBERG.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    names: dict = {}
    exec(code[1], names)  # noqa: S102 - the page's own code, to check the page
    rows = re.findall(r"^\| \w+ \| `([^`]+)` \| ([0-9, ]+) \|", text, re.M)
    assert len(rows) == 10
    for topic, order in rows:
        assert names["first_attempt_order"](topic) == [int(p) for p in order.split(", ")], topic


def test_the_findings_index_lists_every_page_with_a_status_of_its_words() -> None:
    folder = ICEBERG.parent
    index = (folder / "index.md").read_text()
    rows = [line for line in index.splitlines() if line.startswith("| [")]
    linked = {re.search(r"\]\(([^)]+)\)", row)[1] for row in rows}  # type: ignore[index]
    assert linked == {p.name for p in folder.glob("*.md") if p.name != "index.md"}
    for row in rows:
        status = row.split(" | ")[1]
        assert status.split(":")[0].split(" in ")[0] in ("new", "reported", "known", "fixed"), row


def test_the_findings_index_says_the_campaign_s_own_minimum() -> None:
    from harness.explore.campaign import MIN_CELL_S

    assert f"a cell needs at least {MIN_CELL_S / 60:g} minutes" in (ICEBERG.parent / "index.md").read_text()
