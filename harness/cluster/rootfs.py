"""The base image: a Debian root file system from debootstrap with Java 17 and a Python venv, imported.
Debootstrap's packages are kept between builds (its cache folder), as Maven's and Go's own caches are.
Debootstrap takes packages from the release alone: the security archive (`<suite>-security`, from the
host's own apt sources) and the suite's updates are added and upgraded to, so that a base built (or
rebuilt when older than the `image_max_age` setting) has the security fixes of that day.

No registry is reachable, so the base cannot come `FROM` anything: it is bootstrapped from the
host's Debian mirror, the venv is filled from wheels fetched on the host, and the tree is imported.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import versions
from harness.cluster.fetch import debian_mirror, debian_security_mirror, fetch_wheels
from harness.errors import ImageBuildFailed
from harness.progress import run_logged, say, step

CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
VENV = "/opt/venv"


def build_base(tag: str, work: Path, wheels: Path, debs: Path, log: Path) -> None:
    """Bootstrap Debian into `work` (its packages kept in `debs` for the next build) while the pinned
    Python packages' wheels are fetched, install them, import the tree as `tag`."""
    if shutil.which("debootstrap") is None:
        raise ImageBuildFailed("debootstrap is not installed: run `python -m harness doctor --fix`")
    rootfs = work / "rootfs"
    if (rootfs / "proc").is_mount():  # a build killed while upgrading: never delete through /proc
        subprocess.run(["umount", str(rootfs / "proc")], check=True)
    if rootfs.exists():
        shutil.rmtree(rootfs)
    requirements = versions.image_python_requirements()
    debs.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="base") as pool:  # a Debian mirror and PyPI at once
        fetched = pool.submit(_fetch_wheels, requirements, wheels, log)
        with step("base: debootstrap Debian " + versions.DEBIAN_SUITE):
            run_logged(
                [
                    "debootstrap", "--variant=minbase", f"--cache-dir={debs.resolve()}",
                    "--include=" + ",".join(versions.DEBIAN_PACKAGES),
                    versions.DEBIAN_SUITE, str(rootfs), debian_mirror(),
                ],
                log,
                "debootstrap",
            )
        with step(f"base: security updates ({versions.DEBIAN_SUITE}-security)"):
            _upgrade(rootfs, log)
        fetched.result()
    with step("base: install the Python venv"):
        shutil.copytree(wheels, rootfs / "tmp" / "wheels")
        chroot = ["chroot", str(rootfs)]
        run_logged([*chroot, "/usr/bin/python3", "-m", "venv", VENV], log, "venv", env=CHROOT_ENV)
        run_logged(
            [*chroot, f"{VENV}/bin/pip", "install", "--no-index", "--find-links", "/tmp/wheels", *requirements],
            log,
            "pip install",
            env=CHROOT_ENV,
        )
        shutil.rmtree(rootfs / "tmp" / "wheels")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
    java_home = _java_home(rootfs)
    with step(f"base: docker import {tag}"):
        changes = [
            f"ENV PATH={VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            f"ENV JAVA_HOME={java_home}",
            f"ENV PYSPARK_PYTHON={VENV}/bin/python",
            "ENV LANG=C.UTF-8",
        ]
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        command = ["docker", "import"]
        for change in changes:
            command += ["-c", change]
        run_logged([*command, "-", tag], log, "docker import", stdin=tar.stdout)
        if tar.wait() != 0:
            raise ImageBuildFailed(f"step 'docker import' failed: tar of {rootfs} failed; log: {log}")
    shutil.rmtree(rootfs)


def sources(mirror: str, security: str | None, suite: str = versions.DEBIAN_SUITE) -> str:
    """The image's apt sources: the release and its updates from the host's mirror, and its security archive."""
    lines = [f"deb {mirror} {suite} main", f"deb {mirror} {suite}-updates main"]
    if security is not None:
        lines.append(f"deb {security} {suite}-security main")
    return "\n".join(lines) + "\n"


def _upgrade(rootfs: Path, log: Path) -> None:
    """Point the root file system's apt at the release's updates and security archive, and upgrade to them
    (with /proc mounted, as debootstrap mounts it: some packages' scripts read it)."""
    security = debian_security_mirror()
    if security is None:
        say("no Debian security archive in this host's apt sources: the base image gets no security updates")
    (rootfs / "etc" / "apt" / "sources.list").write_text(sources(debian_mirror(), security))
    chroot = ["chroot", str(rootfs)]
    environment = {**CHROOT_ENV, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["mount", "-t", "proc", "proc", str(rootfs / "proc")], check=True)
    try:
        run_logged([*chroot, "apt-get", "update"], log, "apt-get update", env=environment)
        run_logged([*chroot, "apt-get", "-y", "upgrade"], log, "apt-get upgrade", env=environment)
    finally:
        subprocess.run(["umount", str(rootfs / "proc")], check=False)


def _fetch_wheels(requirements: list[str], wheels: Path, log: Path) -> None:
    with step("base: fetch Python wheels on the host"):
        fetch_wheels(requirements, wheels, log)


def _java_home(rootfs: Path) -> str:
    """JAVA_HOME inside the root file system, from where its `java` link points."""
    java = subprocess.run(
        ["chroot", str(rootfs), "readlink", "-f", "/usr/bin/java"],
        capture_output=True, text=True, check=True, env=CHROOT_ENV,
    ).stdout.strip()
    return str(Path(java).parent.parent)
