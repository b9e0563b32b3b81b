"""The command line, `eo-harness` (or `python -m harness`): doctor, images, engine, smoke, run, space,
certify, explore, shrink and check, one module each. One exit contract for every command: 0 what was asked
held, 1 anomalies (or a fault that did not do what it says), 2 bad input, 3 the infrastructure or an
unforeseen error (one line on the console, the traceback in the run's folder), 4 a full certification that
could not try every applicable class, 5 a failure `shrink` could not reproduce twice."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

import harness
from harness import versions
from harness.cli import campaign, certify, check, doctor, engine, explore, images, run, shrink, smoke, space
from harness.cli.options import GLOBAL, add_global_settings
from harness.errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, HarnessError
from harness.evidence import unique_path
from harness.interrupt import terminate_like_ctrl_c
from harness.report.folders import run_report_dir
from harness.run.session import keep_traceback
from harness.settings import SETTINGS, renamed_in_environment

COMMANDS = (doctor, images, engine, smoke, run, space, certify, explore, campaign, shrink, check)


class _OneLineErrors(argparse.ArgumentParser):
    """Bad arguments said in one line (exit 2), as every other bad input is: argparse's usage block before the
    error is left to `--help`, which the line names. Each command's parser is of this class too
    (argparse makes sub-parsers of their parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-command per job."""
    root = _OneLineErrors(prog="eo-harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root.add_argument("--version", action="version", version=f"eo-harness {harness.__version__}")
    add_global_settings(root, default=None)
    commands = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    for sub in _commands_of(root):  # `certify --brokers 3` as well as `--brokers 3 certify`
        add_global_settings(sub, default=argparse.SUPPRESS)
    return root


def _commands_of(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command's parser under `parser`, nested ones (`images build`) included."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += [sub, *_commands_of(sub)]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command by the exit contract. A reader of its output that went away (`| head -1`) ends it
    quietly, as Python's docs advise for SIGPIPE: stdout goes to /dev/null, so Python's own flush at exit has
    nothing to fail on (it said "Exception ignored ... BrokenPipeError" and exited 120). Its status is 3, not
    Python's 1 (anomalies, in the contract): what the command had to say was not all said."""
    try:
        try:
            return _command(argv)
        finally:
            sys.stdout.flush()  # what is still buffered, after argparse's --help (a SystemExit) too
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INFRASTRUCTURE


def _command(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    renamed = renamed_in_environment()
    if renamed:
        print(f"harness: error: {renamed}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for name in GLOBAL:  # the environment carries them to every part of the run
        asked = getattr(args, name)
        if asked:
            os.environ[SETTINGS[name].env] = os.path.abspath(asked) if name == "reports" else str(asked)
    terminate_like_ctrl_c()
    try:
        versions.stack()  # a malformed version is bad input before anything starts
        return int(args.func(args))
    except HarnessError as error:
        print(f"harness: error: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return EXIT_INFRASTRUCTURE
    except BrokenPipeError:  # the reader of the output went away (`| head`): main() ends quietly
        raise
    except Exception as error:  # noqa: BLE001 - a bug or a failure no one foresaw: one line, not "anomalies"
        print(f"harness: unexpected error: {type(error).__name__}: {error} ({_kept(error)})", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


def _kept(error: Exception) -> str:
    """Where an unforeseen error's traceback is kept (a file of its own in reports/errors/ unless a run's
    folder has it), or why it could not be: the one line is said either way."""
    try:
        return "traceback: " + str(getattr(error, "traceback_file", None) or keep_traceback(
            error, unique_path(run_report_dir("errors"), time.strftime("%Y%m%d-%H%M%S"), ".txt")))
    except HarnessError as unwritable:
        return f"its traceback not kept: {unwritable}"
