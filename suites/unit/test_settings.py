"""One settings table: the CLI's flags and defaults, the environment and the settings page all come from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import parser
from harness.settings import SETTINGS, from_environment, given

pytestmark = pytest.mark.unit
SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "settings.md"  # generated


def test_the_commands_take_their_defaults_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_STALL_TIMEOUT", raising=False)
    run = parser().parse_args(["run"])
    certify = parser().parse_args(["certify", "--sink", "s"])
    for name in ("pipeline", "sink", "records", "seed", "stall_timeout", "state_store"):
        assert getattr(run, name) == SETTINGS[name].type(SETTINGS[name].default), name
    for name in ("pipeline", "records", "seed", "stall_timeout", "live_rate"):
        assert getattr(certify, name) == SETTINGS[name].type(SETTINGS[name].default), name


def test_the_environment_sets_a_default_and_the_command_line_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_STALL_TIMEOUT", "300")
    assert parser().parse_args(["run"]).stall_timeout == 300.0 == from_environment("stall_timeout")
    assert parser().parse_args(["run", "--stall-timeout", "60"]).stall_timeout == 60.0


def test_pytest_reads_command_line_then_environment_then_ini(monkeypatch: pytest.MonkeyPatch) -> None:
    class Config:
        def __init__(self, option: str | None, ini: str) -> None:
            self.option, self.ini = option, ini

        def getoption(self, name: str) -> str | None:
            return self.option

        def getini(self, name: str) -> str:
            return self.ini

    monkeypatch.delenv("HARNESS_SINK", raising=False)
    assert given(Config(None, ""), "sink") is None  # not given: no matrix
    assert given(Config(None, "from_ini"), "sink") == "from_ini"
    monkeypatch.setenv("HARNESS_SINK", "from_env")
    assert given(Config(None, "from_ini"), "sink") == "from_env"
    assert given(Config("from_cli", "from_ini"), "sink") == "from_cli"


def test_the_settings_page_lists_every_setting_as_the_table_has_it() -> None:
    text = SETTINGS_PAGE.read_text()
    for s in SETTINGS.values():
        ini = f"`{s.ini}`" if s.ini else "(none)"
        assert f"| `{s.name}` | `{s.flag}` | `{s.env}` | {ini} | {s.default or '(none)'} |" in text, s.name


def test_the_store_s_help_names_the_outputs_that_live_on_s3() -> None:
    import re

    from harness.output.registry import stores
    from harness.settings import SETTINGS

    named = re.search(r"through the gate \(([a-z, ]+);", SETTINGS["store"].help)
    assert named is not None
    assert named.group(1).split(", ") == [found.name for found in stores() if "s3" in found.stores]
