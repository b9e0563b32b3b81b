"""Prerequisite checks, one line each with ok/missing and the fix, the way the base image gets root and the
Debian archive the build takes, then whether this host can build the images and whether it can run
scenarios (exactly what is missing when not); `--fix` installs (as root or through passwordless sudo) and
starts dockerd, and fetches a registry binary for the CI suite's registry test."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import versions
from harness.cluster import apt_sources, root_access
from harness.cluster.engine import docker_client
from harness.cluster.image_inputs import cache_dir
from harness.cluster.readiness import readiness
from harness.errors import EXIT_INFRASTRUCTURE, BadInput, DockerUnavailable
from harness.progress import say
from harness.settings import from_environment

DOCKERD_LOG = Path("/var/log/eo-harness-dockerd.log")
REGISTRY_PACKAGE = "docker-registry"  # Debian's registry (distribution 2.8): the CI suite's pull test runs one


@dataclass(frozen=True)
class Check:
    """One prerequisite: how to test it and what fixes it."""

    name: str
    ok: Callable[[], bool]
    fix: str


def _engine_answers() -> bool:
    """Whether the engine answers the harness's own client: a job image without the docker CLI still runs."""
    try:
        docker_client().close()
    except DockerUnavailable:
        return False
    return True


GO = max(versions.GO_FOR_TOXIPROXY, versions.GO_FOR_VERSITYGW)  # the Go that builds both (an S3 server: --store s3)


def go_is_new_enough(version_line: str) -> bool:
    """Whether `go version`'s line names a Go that builds toxiproxy and versitygw (GO or later)."""
    found = re.search(r"go(\d+)\.(\d+)", version_line)
    return found is not None and (int(found.group(1)), int(found.group(2))) >= GO


def _go() -> bool:
    if shutil.which("go") is None:
        return False
    return go_is_new_enough(subprocess.run(["go", "version"], capture_output=True, text=True, timeout=30).stdout)

CHECKS = (
    Check("docker client", lambda: shutil.which("docker") is not None, "apt-get install docker.io"),
    Check("dockerd", lambda: shutil.which("dockerd") is not None, "python -m harness doctor --fix"),
    Check("docker engine reachable", _engine_answers, "python -m harness doctor --fix"),
    Check("java", lambda: shutil.which("java") is not None, "apt-get install openjdk-17-jdk-headless"),
    Check("maven", lambda: shutil.which("mvn") is not None, "apt-get install maven"),
    Check(f"go {'.'.join(map(str, GO))} or later", _go,
          "install an official Go release (Debian 12's golang-go is too old to build toxiproxy and versitygw)"),
    Check("chromium", lambda: shutil.which("chromium") is not None,  # the CI suite's check of the report
          "python -m harness doctor --fix"),
    Check("docker-registry", lambda: registry_binary() is not None,  # the CI suite's registry test
          "python -m harness doctor --fix"),
)


def _base_tool_check(access: root_access.RootAccess) -> Check:
    """The program the base image's root file system is made with, the way this host gets root for it."""
    tool = access.tools[0] if access.tools else "debootstrap"
    fix = ("python -m harness doctor --fix" if access.way != root_access.UNSHARE
           else "apt-get install mmdebstrap uidmap (as root)")
    return Check(tool, lambda: access.possible and shutil.which(tool) is not None, fix)


def registry_binary() -> str | None:
    """The registry binary: on PATH, else the one `doctor --fix` unpacked into the harness's cache."""
    unpacked = cache_dir() / "tools" / REGISTRY_PACKAGE / "usr" / "bin" / REGISTRY_PACKAGE
    return shutil.which(REGISTRY_PACKAGE) or (str(unpacked) if unpacked.is_file() else None)


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("doctor", help="check (and with --fix, install) the prerequisites")
    parser.add_argument("--fix", action="store_true",
                        help="first, on Debian or Ubuntu, as root or through passwordless sudo (`sudo -n`): apt-get "
                             "install what is missing of docker.io (when no engine answers), of debootstrap (where the "
                             "base image's root file system is made with it) and of debian-archive-keyring (Debian's "
                             "keys, which an Ubuntu host lacks), then chromium (the CI "
                             f"suite's check of the report; its failure is said, not fatal); unpack Debian's "
                             f"{REGISTRY_PACKAGE} binary into the harness's cache where none is found (no service: "
                             "the CI suite's registry test runs it); start dockerd when no engine answers; neither "
                             "root nor sudo: installs nothing")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    return run(args.fix)


def run(fix: bool) -> int:
    """Print each check, then what this host can do; with `fix`, install what apt can and start dockerd
    first. Exit 0 when it can run scenarios (its images present, pulled or built), else 3."""
    if fix:
        install_engine()
    access = root_access.current()
    for check in (*CHECKS[:3], _base_tool_check(access), *CHECKS[3:]):
        ok = check.ok()
        print(f"{check.name:<26} {'ok' if ok else 'missing':<8} {'' if ok else 'fix: ' + check.fix}")
    print(f"{'root for the base image':<26} {access.line()}")
    print(f"{'debian mirror':<26} {apt_sources.doctor_line()}")
    try:
        ready = readiness(from_environment("registry"))
    except BadInput as error:  # a malformed registry setting: said as what this host lacks
        print(f"{'can run scenarios':<26} no: {error}")
        return EXIT_INFRASTRUCTURE
    print(f"{'can build images':<26} {ready.build_line()}")
    print(f"{'can run scenarios':<26} {ready.run_line()}")
    return 0 if ready.can_run else EXIT_INFRASTRUCTURE


def install_engine() -> None:
    """On Debian or Ubuntu, as root or through `sudo -n`: install what is missing of the build's packages, then
    chromium, unpack the registry binary, start dockerd if none answers (what `--fix`'s help says)."""
    access = root_access.current()
    if access.way not in (root_access.ROOT, root_access.SUDO):
        say(f"doctor --fix installs with apt-get and starts dockerd as root or through passwordless sudo, and this "
            f"host has neither ({access.why}); skipping the install")
        return
    as_root = access.prefix
    answers = _engine_answers()  # an engine elsewhere (DOCKER_HOST) needs no dockerd here
    packages = [package for package, tool in (("docker.io", "dockerd"), ("debootstrap", "debootstrap"))
                if shutil.which(tool) is None and (package != "docker.io" or not answers)]
    if not apt_sources.KEYRING.is_file():  # the base's build and PostgreSQL's check Debian's release with it
        packages.append("debian-archive-keyring")  # (a Debian host has it; an Ubuntu host trusts Ubuntu's keys alone)
    wanted = packages + (["chromium"] if shutil.which("chromium") is None else [])
    if wanted:
        say(f"installing {', '.join(wanted)} with {' '.join([*as_root, 'apt-get'])} ...")
        subprocess.run([*as_root, "apt-get", "update", "-q"], check=True, stdout=subprocess.DEVNULL)
    if packages:
        _apt_install(as_root, packages, check=True)
    if shutil.which("chromium") is None and not _apt_install(as_root, ["chromium"], check=False):
        say("chromium: not installed (apt-get has no such package here): only the CI suite's check of the report "
            "needs it")
    if registry_binary() is None:
        unpack_registry()
    if not answers:
        log_path = DOCKERD_LOG if not as_root else cache_dir() / "dockerd.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        say(f"starting dockerd (log: {log_path}) ...")
        with log_path.open("ab") as log:
            subprocess.Popen([*as_root, "dockerd"], stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 60
        while not _engine_answers():
            if time.monotonic() > deadline:
                say(f"dockerd did not answer within 60 s; see {log_path} (not root: is this user in the docker "
                    "group?)")
                return
            time.sleep(1)


def _apt_install(as_root: list[str], packages: list[str], check: bool) -> bool:
    """apt-get install `packages` (as root: `as_root` first); whether it did."""
    return subprocess.run(
        [*as_root, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", *packages],
        check=check, stdout=subprocess.DEVNULL,
    ).returncode == 0


def unpack_registry() -> None:
    """Debian's registry binary unpacked into the harness's cache, not installed: the package would start a
    service on every address, and the test runs its own on loopback only."""
    folder = cache_dir() / "tools"
    folder.mkdir(parents=True, exist_ok=True)
    say(f"fetching {REGISTRY_PACKAGE} (unpacked into {folder}, no service installed) ...")
    subprocess.run(["apt-get", "download", "-q", REGISTRY_PACKAGE], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    package = max(folder.glob(f"{REGISTRY_PACKAGE}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(package), str(folder / REGISTRY_PACKAGE)], check=True)
    package.unlink()
