"""Command-line options made from the settings table (harness.settings): a flag's default is the
setting's environment variable when set, else its one default."""

from __future__ import annotations

import argparse
import os

from harness.settings import SETTINGS, help_text


def add_setting(parser: argparse.ArgumentParser, name: str, **overrides: object) -> None:
    """`--name` of the table's setting `name` on `parser`."""
    setting = SETTINGS[name]
    options: dict[str, object] = {"type": setting.type, "default": setting.type(os.environ.get(setting.env) or
                                                                                  setting.default),
                                  "help": help_text(setting), "dest": name}
    if setting.choices:
        options["choices"] = setting.choices
    parser.add_argument(setting.flag, **{**options, **overrides})
