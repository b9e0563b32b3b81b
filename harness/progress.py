"""Progress lines for long steps, and subprocesses whose output goes to a log with a heartbeat."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness.errors import HarnessError, ImageBuildFailed

HEARTBEAT_SECONDS = 10.0
_speaker = "harness"


def speak_as(name: str) -> None:
    """This process's progress lines carry `name`: workers of a spread certification share one console."""
    global _speaker
    _speaker = f"harness {name}"


def say(message: str) -> None:
    """One progress line on stderr, so stdout stays for results."""
    print(f"[{_speaker}] {message}", file=sys.stderr, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Announce a step and how long it took."""
    started = time.monotonic()
    say(f"{name} ...")
    yield
    say(f"{name}: done in {time.monotonic() - started:.1f} s")


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_logged(
    command: Sequence[str],
    log: Path,
    step_name: str,
    stdin: IO[bytes] | None = None,
    error: type[HarnessError] = ImageBuildFailed,
    env: dict[str, str] | None = None,
) -> None:
    """Run a command with its output in `log`; a heartbeat every 10 s; raise naming the step and log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("ab") as out:
        out.write(f"$ {' '.join(command)}\n".encode())
        out.flush()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=stdin, env=env)
        while True:
            try:
                status = process.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                last = tail(log, 1).strip()[:100]
                say(f"  {step_name}: {time.monotonic() - started:.0f} s ... {last}")
    if status != 0:
        raise error(
            f"step '{step_name}' failed with exit status {status}; log: {log}\n{tail(log)}"
        )
