"""Every test module under suites/unit is marked `unit`: CI selects the unit tests by that mark
(`-m "unit or gate"`), so a module without it never runs there, and no one notices."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
UNIT = Path(__file__).resolve().parent


def test_every_unit_test_module_is_marked_unit() -> None:
    unmarked = [path.name for path in sorted(UNIT.glob("test_*.py"))
                if "pytestmark = pytest.mark.unit" not in path.read_text()]
    assert not unmarked, f"modules CI would never run: {unmarked}"
