"""Fetch build inputs on the host (containers reach no registry): Debian, wheels, Maven jars, Go binaries.

Images fetch at once (harness.cluster.images), each from its own source; Maven runs one at a time, as
two would share its local repository. Registry addresses come from the host's own configuration (apt
sources, pip's and Go's settings, Maven's built-in central repository), never from constants here.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

from harness.errors import ImageBuildFailed
from harness.progress import run_logged


def debian_mirror() -> str:
    """The first Debian archive URI the host's apt is configured with."""
    candidates = sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + ["/etc/apt/sources.list"]
    for path in candidates:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            match = re.match(r"URIs:\s*(\S+)", line) or re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)", line)
            if match and "security" not in match.group(1):
                return match.group(1)
    raise ImageBuildFailed("no Debian mirror found in the host's apt sources (/etc/apt/sources.list*)")


def apt_sources() -> list[str]:
    """The host's apt source files, deb822 ones first."""
    return sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + ["/etc/apt/sources.list"]


def debian_security_mirror(candidates: list[str] | None = None) -> str | None:
    """The Debian security archive URI the host's apt is configured with (a source whose suite ends in
    `-security`), None when it has none."""
    for path in candidates if candidates is not None else apt_sources():
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):  # deb822: one source per paragraph
            uri = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:(.*)$", stanza, re.M)
            if uri and suites and any(suite.endswith("-security") for suite in suites.group(1).split()):
                return uri.group(1)
        for line in text.splitlines():  # one-line style: deb [options] URI SUITE COMPONENTS
            match = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if match and match.group(2).endswith("-security"):
                return match.group(1)
    return None


def maven_central_url() -> str:
    """Maven's own default repository URL, read from the super-POM inside the installed Maven."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ImageBuildFailed("Maven (mvn) is not installed; it fetches Kafka and the Spark connector")
    lib = Path(os.path.realpath(mvn)).parent.parent / "lib"
    for jar in lib.glob("maven-model-builder-*.jar"):
        pom = zipfile.ZipFile(jar).read("org/apache/maven/model/pom-4.0.0.xml").decode()
        urls = re.findall(r"<repository>.*?<url>(.*?)</url>", pom, re.S)
        if urls:
            return urls[0]
    raise ImageBuildFailed(f"cannot read Maven's default repository from {lib}")


def _maven_settings(work: Path) -> Path:
    """A settings file that sends every repository to Maven's default one.

    Spark's parent POM names an extra repository that this machine cannot reach; without the
    mirror, resolution of the connector's dependencies fails on it.
    """
    user_settings = Path.home() / ".m2" / "settings.xml"
    if user_settings.exists() and "<mirror>" in user_settings.read_text():
        return user_settings
    settings = work / "maven-settings.xml"
    settings.write_text(
        "<settings><mirrors><mirror><id>all-to-default</id><mirrorOf>*</mirrorOf>"
        f"<url>{maven_central_url()}</url></mirror></mirrors></settings>\n"
    )
    return settings


_MAVEN = threading.Lock()  # one Maven at a time: images fetched at once share its local repository, not safe to share


def fetch_maven_jars(pom: Path, dest: Path, properties: dict[str, str], log: Path) -> None:
    """Resolve the runtime dependencies of `pom` into `dest` (versions stripped from file names)."""
    work = dest.parent
    work.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    command = [
        "mvn", "-B", "-q", "-f", str(pom), "-s", str(_maven_settings(work)),
        "dependency:copy-dependencies", f"-DoutputDirectory={dest}",
        "-DincludeScope=runtime", "-Dmdep.stripVersion=true",
    ] + [f"-D{key}={value}" for key, value in properties.items()]
    with _MAVEN:
        run_logged(command, log, f"maven {pom.parent.name}")


def fetch_debian_packages(packages: list[str], dest: Path, cache: Path, log: Path) -> None:
    """Download `packages` and everything they depend on (no recommends) from the host's apt sources into
    `dest`: resolved as for an empty system, so the set is whole and consistent; the image installs those
    its base lacks. `cache` keeps the .deb files between builds, as debootstrap's folder does."""
    if shutil.which("apt-get") is None:
        raise ImageBuildFailed("apt-get is not on PATH: a Debian host fetches PostgreSQL's packages")
    status = cache / "empty-status"  # nothing installed: apt resolves the whole closure
    (cache / "partial").mkdir(parents=True, exist_ok=True)
    status.write_text("")
    run_logged(
        ["apt-get", "install", "-y", "-q", "--download-only", "--no-install-recommends",
         f"-o=Dir::State::status={status}", f"-o=Dir::Cache::archives={cache}", "-o=Debug::NoLocking=1",
         *packages],
        log,
        "apt-get download " + " ".join(packages),
    )
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    wanted = _apt_selection(packages, status, cache, log)
    for deb in cache.glob("*.deb"):
        if deb.name in wanted:
            shutil.copy2(deb, dest / deb.name)


def _apt_selection(packages: list[str], status: Path, cache: Path, log: Path) -> set[str]:
    """The .deb file names apt chose for `packages` just now (the cache may hold older versions too), from
    its simulated install: `Inst NAME (VERSION ... [ARCH])`, named NAME_VERSION_ARCH.deb (':' as '%3a')."""
    simulated = subprocess.run(
        ["apt-get", "install", "-s", "-q", "--no-install-recommends", f"-o=Dir::State::status={status}",
         f"-o=Dir::Cache::archives={cache}", "-o=Debug::NoLocking=1", *packages],
        capture_output=True, text=True, check=False,
    )
    if simulated.returncode != 0:
        with log.open("a") as out:
            out.write(simulated.stdout + simulated.stderr)
        raise ImageBuildFailed(f"apt-get -s install {' '.join(packages)} failed; log: {log}")
    chosen = re.findall(r"^Inst (\S+) \((\S+) .*\[(\S+)\]\)", simulated.stdout, re.M)
    return {f"{name}_{version.replace(':', '%3a')}_{arch}.deb" for name, version, arch in chosen}


def fetch_go_binary(module: str, version: str, package: str, dest: Path, log: Path) -> None:
    """Build a static binary of a Go module's package from the Go module proxy into `dest`."""
    if shutil.which("go") is None:
        raise ImageBuildFailed("Go is not installed; it builds toxiproxy's server")
    bin_dir = dest.parent / "gobin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOBIN=str(bin_dir))
    run_logged(["go", "install", f"{module}/{package}@{version}"], log, "go install toxiproxy", env=env)
    shutil.copy2(bin_dir / Path(package).name, dest)


def fetch_wheels(requirements: list[str], dest: Path, log: Path, deps: bool = True) -> None:
    """Download wheels for the images' virtual environment; build wheels of source-only packages.
    `deps=False`: the packages alone, for one whose dependencies the image already has or never imports.

    The host runs the same Python minor version and platform as the images (Debian's python3).
    """
    dest.mkdir(parents=True, exist_ok=True)
    run_logged(
        [sys.executable, "-m", "pip", "wheel", "--wheel-dir", str(dest), *([] if deps else ["--no-deps"]),
         *requirements],
        log,
        "pip wheel",
    )
