"""The base image: a Debian root file system with Java 17 and a Python venv, imported.
Debootstrap's packages are kept between builds (its cache folder), as Maven's and Go's own caches are.
Debootstrap takes packages from the release alone: the security archive (`<suite>-security`, from the
host's own apt sources or the `debian_security_mirror` setting) and the suite's updates are added and
upgraded to, so that a base built (or rebuilt when older than the `image_max_age` setting) has the
security fixes of that day.

No registry is reachable, so the base cannot come `FROM` anything: it is bootstrapped from the host's
Debian mirror (or the `debian_mirror` setting's: harness.cluster.apt_sources), its release checked with
Debian's keyring where the host has it (an Ubuntu host's apt trusts Ubuntu's keys alone), the venv is
filled from wheels fetched on the host, and the tree is imported.

Making the tree takes root (harness.cluster.root_access): as root, debootstrap and chroot run directly;
with passwordless sudo, every command that touches the tree runs through `sudo -n`; with neither,
`mmdebstrap --mode=unshare` builds it in a user namespace, from the release, its updates and its security
archive at once, into a tarball that is imported as it is.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import versions
from harness.cluster import root_access
from harness.cluster.apt_sources import debian_mirror, debian_security_mirror, keyring_options, release_sources
from harness.cluster.fetch import fetch_wheels
from harness.errors import ImageBuildFailed
from harness.progress import run_logged, say, step

CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
VENV = "/opt/venv"
UPGRADE_MOUNTS = ("proc", "var/cache/apt/archives")  # in the tree while it is upgraded (_upgrade)
NO_SECURITY = ("no Debian security archive in this host's apt sources nor in the debian_security_mirror setting: "
               "the base image gets no security updates")


def build_base(tag: str, work: Path, wheels: Path, debs: Path, log: Path) -> None:
    """Bootstrap Debian into `work` (its packages kept in `debs` for the next build) while the pinned
    Python packages' wheels are fetched, install them, import the tree as `tag`."""
    access = root_access.current()
    if not access.possible:
        raise ImageBuildFailed(f"the base image's root file system takes root: {access.why}")
    for tool in access.tools:
        if shutil.which(tool) is None:
            raise ImageBuildFailed(f"{tool} is not installed: run `python -m harness doctor --fix`")
    debian_mirror()  # none named: said before anything is downloaded
    requirements = versions.image_python_requirements()
    debs.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="base") as pool:  # a Debian mirror and PyPI at once
        fetched = pool.submit(_fetch_wheels, requirements, wheels, log)
        if access.way == root_access.UNSHARE:
            _build_unshare(tag, work, wheels, debs, log, requirements, fetched.result)
        else:
            _build_debootstrap(tag, work, wheels, debs, log, requirements, fetched.result, access.prefix)


def _build_debootstrap(tag: str, work: Path, wheels: Path, debs: Path, log: Path, requirements: list[str],
                       fetched: Callable[[], object], as_root: list[str]) -> None:
    """debootstrap, upgrade, venv and import, every command on the tree run as root (`as_root` first)."""
    rootfs = work / "rootfs"
    for mount in UPGRADE_MOUNTS:  # a build killed while upgrading: never delete through them
        if (rootfs / mount).is_mount():
            subprocess.run([*as_root, "umount", str(rootfs / mount)], check=True)
    if rootfs.exists():
        subprocess.run([*as_root, "rm", "-rf", str(rootfs)], check=True)
    with step("base: debootstrap Debian " + versions.DEBIAN_SUITE):
        run_logged(
            [
                *as_root, "debootstrap", "--variant=minbase", f"--cache-dir={debs.resolve()}", *keyring_options(),
                "--include=" + ",".join(versions.DEBIAN_PACKAGES),
                versions.DEBIAN_SUITE, str(rootfs), debian_mirror(),
            ],
            log,
            "debootstrap",
        )
    with step(f"base: security updates ({versions.DEBIAN_SUITE}-security)"):
        _upgrade(rootfs, debs, log, as_root)
    fetched()
    with step("base: install the Python venv"):
        shutil.copytree(wheels, rootfs / "tmp" / "wheels")  # /tmp is everyone's: no root needed
        run_logged(_chroot(as_root, rootfs, "/usr/bin/python3", "-m", "venv", VENV), log, "venv")
        run_logged(
            _chroot(as_root, rootfs, f"{VENV}/bin/pip", "install", "--no-index", "--find-links", "/tmp/wheels",
                    *requirements),
            log,
            "pip install",
        )
        subprocess.run([*as_root, "rm", "-rf", str(rootfs / "tmp" / "wheels")], check=True)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            subprocess.run([*as_root, "find", str(rootfs / cache), "-maxdepth", "1", "-type", "f", "-delete"],
                           check=True)
    java_home = _java_home(subprocess.run(
        _chroot(as_root, rootfs, "readlink", "-f", "/usr/bin/java"), capture_output=True, text=True, check=True,
    ).stdout)
    with step(f"base: docker import {tag}"):
        tar = subprocess.Popen([*as_root, "tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        run_logged(_import_command(tag, java_home), log, "docker import", stdin=tar.stdout)
        if tar.wait() != 0:
            raise ImageBuildFailed(f"step 'docker import' failed: tar of {rootfs} failed; log: {log}")
    subprocess.run([*as_root, "rm", "-rf", str(rootfs)], check=True)


def _build_unshare(tag: str, work: Path, wheels: Path, debs: Path, log: Path, requirements: list[str],
                   fetched: Callable[[], object]) -> None:
    """mmdebstrap in a user namespace: the release, its updates and its security archive at once (the newest
    of each package, as an upgrade leaves it), the venv filled in its hooks, a tarball imported."""
    fetched()  # the hooks copy the wheels in
    work.mkdir(parents=True, exist_ok=True)
    tarball, java_file = work / "rootfs.tar", work / "java-home"
    tarball.unlink(missing_ok=True)
    java_file.unlink(missing_ok=True)
    security = debian_security_mirror()
    if security is None:
        say(NO_SECURITY)
    suite = versions.DEBIAN_SUITE
    lists = [line for line in release_sources(debian_mirror(), security, suite).splitlines() if line]
    environment = " ".join(shlex.quote(f"{key}={value}") for key, value in CHROOT_ENV.items())
    in_root = f'chroot "$1" env -i {environment}'
    pip = " ".join(shlex.quote(part) for part in
                   [f"{VENV}/bin/pip", "install", "--no-index", "--find-links", "/tmp/wheels", *requirements])
    hooks = [
        ("--setup-hook", 'mkdir -p "$1"/var/cache/apt/archives'),
        ("--setup-hook", f"sync-in {debs.resolve()} /var/cache/apt/archives"),  # last build's packages
        ("--customize-hook", f"sync-out /var/cache/apt/archives {debs.resolve()}"),
        ("--customize-hook", 'mkdir -p "$1"/tmp/wheels'),
        ("--customize-hook", f"sync-in {wheels.resolve()} /tmp/wheels"),
        ("--customize-hook", f"{in_root} /usr/bin/python3 -m venv {VENV}"),
        ("--customize-hook", f"{in_root} {pip}"),
        ("--customize-hook", 'rm -rf "$1"/tmp/wheels'),
        ("--customize-hook", f'{in_root} readlink -f /usr/bin/java > "$1"/tmp/java-home'),
        ("--customize-hook", f"download /tmp/java-home {java_file}"),
        ("--customize-hook", 'rm -f "$1"/tmp/java-home'),
    ]
    with step(f"base: mmdebstrap --mode=unshare Debian {suite} (with its updates and security archive)"):
        with tempfile.TemporaryDirectory(prefix="eo-harness-mmdebstrap-") as scratch:
            Path(scratch).chmod(0o1777)  # the namespace's root is another user: TMPDIR must be everyone's
            run_logged(
                ["mmdebstrap", "--mode=unshare", "--variant=minbase", "--skip=essential/unlink", *keyring_options(),
                 "--include=" + ",".join(versions.DEBIAN_PACKAGES),
                 *[part for option, hook in hooks for part in (option, hook)],
                 suite, str(tarball), *lists],
                log,
                "mmdebstrap",
                env={**os.environ, "TMPDIR": scratch},
            )
    java_home = _java_home(java_file.read_text())
    with step(f"base: docker import {tag}"), tarball.open("rb") as tar:
        run_logged(_import_command(tag, java_home), log, "docker import", stdin=tar)
    tarball.unlink()
    java_file.unlink()


def _chroot(as_root: list[str], rootfs: Path, *command: str, **extra: str) -> list[str]:
    """`command` run as root inside `rootfs`, in CHROOT_ENV (and `extra`) alone: sudo would drop it."""
    environment = [f"{key}={value}" for key, value in {**CHROOT_ENV, **extra}.items()]
    return [*as_root, "env", "-i", *environment, "chroot", str(rootfs), *command]


def _import_command(tag: str, java_home: str) -> list[str]:
    changes = [
        f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"ENV JAVA_HOME={java_home}",
        f"ENV PYSPARK_PYTHON={VENV}/bin/python",
        "ENV LANG=C.UTF-8",
    ]
    command = ["docker", "import"]
    for change in changes:
        command += ["-c", change]
    return [*command, "-", tag]


def _upgrade(rootfs: Path, debs: Path, log: Path, as_root: list[str]) -> None:
    """Point the root file system's apt at the release's updates and security archive, and upgrade to them
    (with /proc mounted, as debootstrap mounts it: some packages' scripts read it). apt's package folder is
    `debs`, debootstrap's cache, mounted: an update fetched once is not fetched again by the next rebuild
    (one `image_max_age` later) unless a newer one came out."""
    security = debian_security_mirror()
    if security is None:
        say(NO_SECURITY)
    subprocess.run([*as_root, "tee", str(rootfs / "etc" / "apt" / "sources.list")],
                   input=release_sources(debian_mirror(), security).encode(), stdout=subprocess.DEVNULL, check=True)
    mounted: list[Path] = []
    try:
        for mount, source in zip(UPGRADE_MOUNTS, (["-t", "proc", "proc"], ["--bind", str(debs.resolve())]),
                                 strict=True):
            subprocess.run([*as_root, "mount", *source, str(rootfs / mount)], check=True)
            mounted.append(rootfs / mount)
        run_logged(_chroot(as_root, rootfs, "apt-get", "update"), log, "apt-get update")
        run_logged(_chroot(as_root, rootfs, "apt-get", "-y", "upgrade", DEBIAN_FRONTEND="noninteractive"), log,
                   "apt-get upgrade")
    finally:
        for path in reversed(mounted):
            subprocess.run([*as_root, "umount", str(path)], check=False)


def _fetch_wheels(requirements: list[str], wheels: Path, log: Path) -> None:
    with step("base: fetch Python wheels on the host"):
        fetch_wheels(requirements, wheels, log)


def _java_home(java: str) -> str:
    """JAVA_HOME inside the root file system, from where its `java` link points (`readlink -f`'s output)."""
    return str(Path(java.strip()).parent.parent)
