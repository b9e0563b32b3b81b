"""Command-line options made from the settings table (harness.settings): a flag's default is the
setting's environment variable when set, else its one default."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from harness.errors import BadInput
from harness.settings import FLINK, RENAMED, SETTINGS, help_text
from harness.subject import dependencies

# Settings every command takes, before or after its name: `eo-harness --brokers 3 certify` or `certify --brokers 3`.
GLOBAL = ("reports", "kafka", "spark", "flink", "iceberg", "brokers", "registry", "image_max_age", "debian_mirror",
          "debian_security_mirror")
METAVARS = {"reports": "DIR", "brokers": "N", "kafka": "VERSION", "spark": "VERSION", "flink": "VERSION",
            "iceberg": "VERSION", "registry": "REGISTRY", "image_max_age": "DAYS", "debian_mirror": "URL",
            "debian_security_mirror": "URL"}


def add_setting(parser: argparse.ArgumentParser, name: str, required: bool = False, no_default: bool = False,
                **overrides: object) -> None:
    """`--name` of the table's setting `name` on `parser`; `required` only when its environment variable
    does not give it (the table says every setting has one); `no_default`: None unless the flag or the
    environment gives it (the command says what is missing, as `certify merge` needs no sink)."""
    setting = SETTINGS[name]
    given = os.environ.get(setting.env)
    options: dict[str, object] = {"type": setting.type, "default": setting.type(given or setting.default),
                                  "help": help_text(setting), "dest": name}
    if required or no_default:
        options.update(default=setting.type(given) if given else None, required=required and not given,
                       help=f"{setting.help} (env {setting.env}; required unless that is set)")
    if setting.choices:
        options["choices"] = setting.choices
    parser.add_argument(setting.flag, action=SettingList if setting.many else SettingOption, **{**options, **overrides})


class SettingOption(argparse._StoreAction):
    """An option made from the settings table: the reference pages tell it from a command's own option of
    the same name (`check --output TOPIC` is not the `output` setting)."""


class SettingList(SettingOption):
    """A list setting's flag: the first given replaces the environment's value, each one after adds a line."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, f"_{self.dest}_given", False)
        before = getattr(namespace, self.dest) if given else ""
        setattr(namespace, self.dest, f"{before}\n{values}" if before else values)
        setattr(namespace, f"_{self.dest}_given", True)


def add_dependency_settings(parser: argparse.ArgumentParser) -> None:
    """The settings that ship a sink's packages, jars and Spark settings with it."""
    for name, metavar in zip(dependencies.SETTINGS, ("REQUIREMENT", "FILE", "COORDINATES", "KEY=VALUE"), strict=True):
        add_setting(parser, name, metavar=metavar)


def add_search_settings(parser: argparse.ArgumentParser) -> None:
    """What every scenario of a search (`explore`, `campaign`) shares: its workload, its timeouts, its live rate,
    its restarts and what ships with the sink; and the old names, refused with the new."""
    add_setting(parser, "seed")
    add_setting(parser, "records")
    add_setting(parser, "stall_timeout", metavar="S")
    add_setting(parser, "live_rate", metavar="R")
    add_setting(parser, "restarts", metavar="N")
    add_dependency_settings(parser)
    refuse_renamed(parser)


def add_global_settings(parser: argparse.ArgumentParser, default: object) -> None:
    """The settings every command takes (`default`: None on the root parser, argparse.SUPPRESS on a
    command's, so that a value given before the command name is not overwritten)."""
    for name in GLOBAL:
        add_setting(parser, name, metavar=METAVARS[name], default=default)


class Renamed(argparse.Action):
    """A flag that no longer exists: refused with what to write instead (a usage error, exit 2)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(RENAMED[self.dest])


def refuse_renamed(parser: argparse.ArgumentParser, names: Sequence[str] = tuple(RENAMED)) -> None:
    """Old names on `parser`, hidden from its help, refused with what to write instead."""
    for name in names:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, action=Renamed, nargs="?",
                            help=argparse.SUPPRESS)


def add_engine(parser: argparse.ArgumentParser) -> None:
    """`--engine` and `--job`: a command that takes Spark's sink takes a Flink job in its place."""
    add_setting(parser, "engine")
    add_setting(parser, "job", no_default=True)


def engine_subject(args: argparse.Namespace, command: str) -> str:
    """What the engine runs: Spark's sink (`--sink`), or a Flink job (`--job`, the reference unless given)."""
    if args.engine == FLINK:
        if args.sink is not None:
            raise BadInput("--engine flink runs a Flink job: give --job (a job writes its own sink), not --sink")
        return args.job or SETTINGS["job"].default
    if args.job is not None:
        raise BadInput("--job names a Flink job: give --engine flink, or a sink with --sink")
    if args.sink is None:
        raise BadInput(f"{command} needs --sink" + (" (or `certify merge DIR...` to join shards' certificates)"
                                                  if command == "certify" else ""))
    return args.sink
