"""SIGTERM ends a run the way Ctrl-C does, so that every `with` block removes what it started.

Without this, a terminated run (CI's timeout, `kill`) dies at once and leaves its containers
running until the next run sweeps them.
"""

from __future__ import annotations

import signal
from typing import Any


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def terminate_like_ctrl_c() -> None:
    """Install the handler; call once, from the main thread of a command, pytest session or script."""
    signal.signal(signal.SIGTERM, _interrupted)
