"""The command line, `eo-harness` (or `python -m harness`): doctor, images, engine, smoke, run, space,
certify, explore, shrink and check, one module each. One exit contract for every command: 0 the verdict is a
pass, 1 anomalies (or a fault that did not do what it says), 2 bad input, 3 the infrastructure or an
unforeseen error (one line on the console, the traceback in the run's folder)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from harness import versions
from harness.cli import certify, check, doctor, engine, explore, images, run, shrink, smoke, space
from harness.cli.options import add_setting
from harness.errors import EXIT_INFRASTRUCTURE, HarnessError
from harness.evidence import unique_path
from harness.interrupt import terminate_like_ctrl_c
from harness.report.folders import run_report_dir
from harness.run.session import keep_traceback
from harness.settings import SETTINGS

COMMANDS = (doctor, images, engine, smoke, run, space, certify, explore, shrink, check)
CLUSTER_COMMANDS = ("smoke", "run", "space", "certify", "explore", "shrink")  # those that start a cluster


def parser() -> argparse.ArgumentParser:
    """The argument parser, with one sub-command per job."""
    root = argparse.ArgumentParser(prog="eo-harness", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("reports", "kafka", "spark", "brokers", "registry"):
        add_setting(root, name, metavar={"reports": "DIR", "brokers": "N", "registry": "REGISTRY"}.get(name, "VERSION"),
                    default=None)
    commands = root.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    for name in CLUSTER_COMMANDS:  # `certify --brokers 3` as well as `--brokers 3 certify`
        add_setting(commands.choices[name], "brokers", metavar="N", default=argparse.SUPPRESS)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for name in ("reports", "kafka", "spark", "brokers", "registry"):  # the environment carries them to every part
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
    except BrokenPipeError:  # the reader of our output went away (`| head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_INFRASTRUCTURE
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
