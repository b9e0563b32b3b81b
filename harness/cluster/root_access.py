"""How the base image's root file system gets the root it takes (files owned by root, `chroot`, a mount).

One way per host, decided once: `root` when this process is root; `sudo` when it is not but `sudo -n`
works (a CI runner's user with passwordless sudo): debootstrap, chroot and what touches the tree run
through `sudo -n`; `unshare` when neither, and mmdebstrap can build the tree unprivileged in a user
namespace (`mmdebstrap --mode=unshare`: newuidmap, a subordinate id range, namespaces allowed); else
none, with the reason. `doctor` says which.
"""

from __future__ import annotations

import functools
import getpass
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT, SUDO, UNSHARE, NONE = "root", "sudo", "unshare", "none"
SUDO_PREFIX = ("sudo", "-n")


@dataclass(frozen=True)
class RootAccess:
    """The way, and why it was chosen (for NONE: what each way lacks)."""

    way: str
    why: str

    @property
    def possible(self) -> bool:
        return self.way != NONE

    @property
    def prefix(self) -> list[str]:
        """What a command that needs root starts with (nothing in unshare mode: mmdebstrap runs as the user)."""
        return list(SUDO_PREFIX) if self.way == SUDO else []

    @property
    def tools(self) -> tuple[str, ...]:
        """The programs on PATH that building the base this way takes."""
        return {ROOT: ("debootstrap",), SUDO: ("debootstrap",), UNSHARE: ("mmdebstrap",)}.get(self.way, ())

    def lacks(self) -> list[str]:
        """What a build of the base lacks beside its tools: root, when no way gives it."""
        return [] if self.possible else [f"root ({self.why})"]

    def line(self) -> str:
        """`doctor`'s line: the way and why."""
        return f"{self.way}: {self.why}"


def choose(euid: int, sudo_works: bool, unshare_problem: str | None) -> RootAccess:
    """The way for a process of `euid`, given whether `sudo -n` works and what keeps an unprivileged
    mmdebstrap from working (None: nothing)."""
    if euid == 0:
        return RootAccess(ROOT, "this process is root: debootstrap and chroot run directly")
    if sudo_works:
        return RootAccess(SUDO, "not root, passwordless sudo works: debootstrap and chroot run through `sudo -n`")
    if unshare_problem is None:
        return RootAccess(UNSHARE, "not root, no passwordless sudo: `mmdebstrap --mode=unshare` builds the tree "
                                   "in a user namespace")
    return RootAccess(NONE, f"not root, no passwordless sudo, and mmdebstrap --mode=unshare cannot: {unshare_problem}")


def unshare_problem(which: Callable[[str], str | None], user: str, subids: Callable[[str], str],
                    namespaces_work: Callable[[], bool]) -> str | None:
    """What keeps `mmdebstrap --mode=unshare` from working for `user` (None: nothing): the programs, an
    entry for the user in /etc/subuid and /etc/subgid (`subids(path)` reads one), user namespaces."""
    absent = [tool for tool in ("mmdebstrap", "newuidmap", "newgidmap") if which(tool) is None]
    if absent:
        return f"{', '.join(absent)} not installed (Debian: apt-get install mmdebstrap uidmap)"
    for path in ("/etc/subuid", "/etc/subgid"):
        if not any(line.split(":")[0] == user for line in subids(path).splitlines()):
            return f"no range for {user} in {path} (usermod --add-subuids/--add-subgids)"
    if not namespaces_work():
        return "this host does not let an unprivileged user make a user namespace (unshare --user fails)"
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _sudo_works() -> bool:
    if shutil.which("sudo") is None:
        return False
    return subprocess.run([*SUDO_PREFIX, "true"], capture_output=True, timeout=30).returncode == 0


def _namespaces_work() -> bool:
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


@functools.cache
def current() -> RootAccess:
    """This host's way (probed once: `sudo -n true`, then mmdebstrap's needs)."""
    euid = os.geteuid()
    if euid == 0:
        return choose(euid, False, None)
    sudo = _sudo_works()
    problem = None if sudo else unshare_problem(shutil.which, getpass.getuser(), _read, _namespaces_work)
    return choose(euid, sudo, problem)
