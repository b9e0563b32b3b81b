"""A module is read in one sitting: none of the harness's is over 400 lines, unless its docstring says why
(with the words "over 400 lines")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "harness"
MAX_LINES = 400


def test_no_module_is_over_400_lines_unless_it_says_why() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > MAX_LINES and "over 400 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{path.relative_to(PACKAGE.parent)}: {len(text.splitlines())} lines")
    assert not long, long
