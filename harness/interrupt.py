"""SIGTERM ends a run the way Ctrl-C does, so that every `with` block removes what it started.

Without this, a terminated run (CI's timeout, `kill`) dies at once and leaves its containers
running until the next run sweeps them.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import Any


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def terminate_like_ctrl_c() -> None:
    """Install the handler; call once, from the main thread of a command, pytest session or script."""
    signal.signal(signal.SIGTERM, _interrupted)


def run_script(main: Callable[[], int | None]) -> None:
    """Run a script's `main` as a command runs: SIGTERM as Ctrl-C, and an interruption ends it with one
    line and status 130 (its `with` blocks have removed what it started), not a traceback."""
    terminate_like_ctrl_c()
    try:
        status = main()
    except KeyboardInterrupt:
        print("interrupted: what the run started has been removed", file=sys.stderr)
        sys.exit(130)
    sys.exit(status)
