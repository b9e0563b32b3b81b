"""A reader of the output that goes away (`eo-harness certify --dry-run | head -1`) ends every command
quietly, as Python's docs advise for SIGPIPE: no BrokenPipeError traceback nor "Exception ignored" line, and
the contract's 3 rather than Python's 120, buffered or not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import EXIT_INFRASTRUCTURE

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("command", [["certify", "--sink", "transactional", "--dry-run"], ["--help"]],
                         ids=["certify-dry-run", "help"])
def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path: Path, command: list[str], unbuffered: str) -> None:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
    environment["PYTHONUNBUFFERED"] = unbuffered
    started = subprocess.Popen([sys.executable, "-m", "harness", *command], cwd=tmp_path, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert started.stdout is not None and started.stderr is not None
    started.stdout.close()  # before the command writes a line: every write of it finds no reader
    said = started.stderr.read()
    status = started.wait(timeout=120)
    assert said == "", said
    if command != ["--help"]:
        assert status == EXIT_INFRASTRUCTURE, status
    else:  # unbuffered, argparse drops what it cannot write and exits 0
        assert status in (0, EXIT_INFRASTRUCTURE), status
