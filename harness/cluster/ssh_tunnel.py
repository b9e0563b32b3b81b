"""An ssh:// engine, reached through a tunnel of the user's ssh binary: a local unix socket forwarded to the
engine's socket on its machine (`ssh -N -L`), so that the harness talks to it as to a local socket.

The docker SDK's own ssh transport (paramiko, or the ssh binary's `docker system dial-stdio`) loses exec's
pipe (docker/docker-py#3218) and opens a session per connection (sshd allows 10 by default); the harness
needs exec for its faults and logs, and many connections at once. A forwarded socket has neither problem.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

from harness.errors import BadInput, InfrastructureError

REMOTE_SOCKET = "/var/run/docker.sock"  # the engine's socket on its machine, as `docker -H ssh://` assumes
OPEN_TIMEOUT_S = 30.0
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the ssh child: SIGTERM when the harness dies, even by SIGKILL (Linux; elsewhere atexit only)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def ssh_target(url: str) -> tuple[str, int | None]:
    """`[user@]host` and the port of an ssh:// engine URL; BadInput for a destination ssh would read as an
    option (a leading '-'), none, or a port that is not a number."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise BadInput(f"Docker host {url!r}: {error}") from None
    host, user = parts.hostname or "", parts.username or ""
    if not host or host.startswith("-") or user.startswith("-") or any(c.isspace() for c in host + user):
        raise BadInput(f"Docker host {url!r}: write ssh://[user@]host[:port], with a host and user that do not "
                       "start with '-'")
    return (f"{user}@{host}" if user else host), port


def open_tunnel(url: str) -> str:
    """Forward a local socket to the engine of `url` (ssh://[user@]host[:port]); its unix:// URL. The tunnel
    closes when this process ends."""
    destination, port = ssh_target(url)
    if shutil.which("ssh") is None:
        raise InfrastructureError(f"the Docker engine at {url} is reached over ssh, and no ssh binary is installed")
    folder = tempfile.mkdtemp(prefix="eo-harness-ssh-")
    local = os.path.join(folder, "docker.sock")
    command = ["ssh", "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", "-L", f"{local}:{REMOTE_SOCKET}"]
    if port:
        command += ["-p", str(port)]
    command += ["--", destination]  # never read as an option, whatever it holds
    tunnel = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              preexec_fn=_die_with_parent)

    def close() -> None:
        if tunnel.poll() is None:
            tunnel.terminate()
            tunnel.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(close)
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while not os.path.exists(local):
        if tunnel.poll() is not None or time.monotonic() > deadline:
            close()
            reason = (tunnel.stderr.read().decode(errors="replace").strip().splitlines() or ["no answer"])[-1] \
                if tunnel.stderr else "no answer"
            raise InfrastructureError(f"no ssh tunnel to the Docker engine at {url}: {reason[:200]} "
                                      f"(`{' '.join(command[:-1])} HOST` must work without a password prompt)")
        time.sleep(0.1)
    return f"unix://{local}"
