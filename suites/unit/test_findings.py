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
