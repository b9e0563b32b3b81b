"""The base image: a Debian root file system from debootstrap with Java 17 and a Python venv, imported.
Debootstrap's packages are kept between builds (its cache folder), as Maven's and Go's own caches are.

No registry is reachable, so the base cannot come `FROM` anything: it is bootstrapped from the
host's Debian mirror, the venv is filled from wheels fetched on the host, and the tree is imported.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import versions
from harness.cluster.fetch import debian_mirror, fetch_wheels
from harness.errors import ImageBuildFailed
from harness.progress import run_logged, step

CHROOT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
VENV = "/opt/venv"


def build_base(tag: str, work: Path, wheels: Path, debs: Path, log: Path) -> None:
    """Bootstrap Debian into `work` (its packages kept in `debs` for the next build) while the pinned
    Python packages' wheels are fetched, install them, import the tree as `tag`."""
    if shutil.which("debootstrap") is None:
        raise ImageBuildFailed("debootstrap is not installed: run `python -m harness doctor --fix`")
    rootfs = work / "rootfs"
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
