"""Fetch build inputs on the host (containers reach no registry): Debian, wheels, Maven jars, Go binaries.

Images fetch at once (harness.cluster.images), each from its own source; Maven runs one at a time, as
two would share its local repository. Registry addresses come from the host's own configuration (apt
sources or the settings that name a Debian archive: harness.cluster.apt_sources, pip's and Go's settings,
Maven's built-in central repository), never from constants here.
"""

from __future__ import annotations

import email.parser
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from harness import versions
from harness.cluster import apt_sources
from harness.errors import ImageBuildFailed
from harness.progress import run_logged


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


def fetch_maven_jars(pom: Path, dest: Path, properties: dict[str, str], log: Path, versioned: bool = False) -> None:
    """Resolve the runtime dependencies of `pom` into `dest` (versions stripped from file names, unless
    `versioned`: named as Flink's lib/ names its own jars)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    _copy_dependencies(pom, dest, log, f"maven {pom.parent.name}",
                       [f"-Dmdep.stripVersion={str(not versioned).lower()}",
                        *(f"-D{key}={value}" for key, value in properties.items())])


def _copy_dependencies(pom: Path, dest: Path, log: Path, label: str, options: list[str]) -> None:
    """Maven copies `pom`'s runtime dependencies into `dest` (with `options` of its copy), one Maven at a time."""
    command = ["mvn", "-B", "-q", "-f", str(pom), "-s", str(_maven_settings(dest.parent)),
               "dependency:copy-dependencies", f"-DoutputDirectory={dest}", "-DincludeScope=runtime", *options]
    with _MAVEN:
        run_logged(command, log, label)


def fetch_debian_packages(packages: list[str], dest: Path, cache: Path, log: Path) -> None:
    """Download `packages` and everything they depend on (no recommends) from Debian's archive for the images'
    release into `dest`: resolved as for an empty system, so the set is whole and consistent; the image installs
    those its base lacks. `cache` keeps the .deb files between builds, as debootstrap's folder does."""
    if shutil.which("apt-get") is None:
        raise ImageBuildFailed("apt-get is not on PATH: it fetches PostgreSQL's packages from Debian's archive")
    status = cache / "empty-status"  # nothing installed: apt resolves the whole closure
    (cache / "partial").mkdir(parents=True, exist_ok=True)
    status.write_text("")
    apt = _debian_apt(cache)
    run_logged(["apt-get", "update", "-q", *apt], log, f"apt-get update (Debian {versions.DEBIAN_SUITE})")
    run_logged(
        ["apt-get", "install", "-y", "-q", "--download-only", "--no-install-recommends",
         f"-o=Dir::State::status={status}", f"-o=Dir::Cache::archives={cache}", *apt, *packages],
        log,
        "apt-get download " + " ".join(packages),
    )
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    wanted = _apt_selection(packages, status, cache, apt, log)
    for deb in cache.glob("*.deb"):
        if deb.name in wanted:
            shutil.copy2(deb, dest / deb.name)


def _debian_apt(cache: Path) -> list[str]:
    """apt-get's options for an apt of its own, its state in `cache`, that knows Debian's archive for the
    images' release alone: the host's apt may name another release's or Ubuntu's, and its pins are not read."""
    own = cache / "apt"
    (own / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (own / "parts").mkdir(exist_ok=True)  # no source or pin files beside this one's
    keyring = apt_sources.KEYRING
    (own / "sources.list").write_text(apt_sources.release_sources(
        apt_sources.debian_mirror(), apt_sources.debian_security_mirror(), versions.DEBIAN_SUITE,
        f"[signed-by={keyring}] " if keyring.is_file() else ""))
    return [f"-o=Dir::Etc::SourceList={own / 'sources.list'}", f"-o=Dir::Etc::SourceParts={own / 'parts'}",
            f"-o=Dir::Etc::Preferences={own / 'preferences'}", f"-o=Dir::Etc::PreferencesParts={own / 'parts'}",
            f"-o=Dir::State::Lists={own / 'lists'}", f"-o=Dir::Cache={own}", "-o=Debug::NoLocking=1"]


def _apt_selection(packages: list[str], status: Path, cache: Path, apt: list[str], log: Path) -> set[str]:
    """The .deb file names apt chose for `packages` just now (the cache may hold older versions too), from
    its simulated install: `Inst NAME (VERSION ... [ARCH])`, named NAME_VERSION_ARCH.deb (':' as '%3a')."""
    simulated = subprocess.run(
        ["apt-get", "install", "-s", "-q", "--no-install-recommends", f"-o=Dir::State::status={status}",
         f"-o=Dir::Cache::archives={cache}", *apt, *packages],
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
        raise ImageBuildFailed(f"Go is not installed; it builds {module}")
    bin_dir = dest.parent / "gobin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOBIN=str(bin_dir))
    run_logged(["go", "install", f"{module}/{package}@{version}"], log, f"go install {module}", env=env)
    shutil.copy2(bin_dir / Path(package).name, dest)


def image_wheels(cache: Path, apart: str = "") -> Path:
    """The folder of wheels for the images' interpreter, apart from any fetched for another one; `apart`: a
    folder of its own for one image's (Flink's), whose many packages the base's install must not choose from."""
    major, minor = versions.IMAGE_PYTHON
    return cache / f"wheels-cp{major}{minor}{f'-{apart}' if apart else ''}"


def image_platforms(machine: str | None = None) -> list[str]:
    """The manylinux platforms the images' glibc runs, newest first, for the host's architecture (the
    images are bootstrapped for it), down to the oldest (glibc 2.5): with their older names, as PEP 600 has them
    (manylinux2014 is 2.17's, manylinux2010 2.12's, manylinux1 2.5's: pemja's only wheel is tagged manylinux1)."""
    arch = machine or platform.machine()
    _, newest = versions.IMAGE_GLIBC
    legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
    return [name for minor in range(newest, 4, -1)
            for name in (f"manylinux_2_{minor}_{arch}", *([f"{legacy[minor]}_{arch}"] if minor in legacy else []))]


def image_tags(machine: str | None = None) -> frozenset[Tag]:
    """Every wheel tag the images' interpreter installs: CPython of versions.IMAGE_PYTHON on their glibc."""
    python = versions.IMAGE_PYTHON
    platforms = image_platforms(machine)
    abi = f"cp{python[0]}{python[1]}"
    return frozenset([*cpython_tags(python, [abi], platforms), *compatible_tags(python, abi, platforms)])


def pip_target() -> list[str]:
    """pip's options that choose wheels for the images' interpreter and platform instead of the host's."""
    major, minor = versions.IMAGE_PYTHON
    platforms = [option for name in image_platforms() for option in ("--platform", name)]
    return ["--only-binary=:all:", "--python-version", f"{major}.{minor}", "--implementation", "cp",
            "--abi", f"cp{major}{minor}", *platforms]


def image_environment(machine: str | None = None) -> dict[str, str]:
    """The environment markers of the images' interpreter (pip judges markers by the host's own)."""
    major, minor = versions.IMAGE_PYTHON
    return {"python_version": f"{major}.{minor}", "python_full_version": f"{major}.{minor}.0",
            "implementation_name": "cpython", "implementation_version": f"{major}.{minor}.0",
            "platform_python_implementation": "CPython", "sys_platform": "linux", "os_name": "posix",
            "platform_system": "Linux", "platform_machine": machine or platform.machine()}


def fetch_wheels(requirements: list[str], dest: Path, log: Path, deps: bool = True,
                 provided: Mapping[str, str] | None = None) -> list[Path]:
    """Download wheels for the images' interpreter (versions.IMAGE_PYTHON on Debian's glibc), whatever
    Python the host runs, with the dependencies that interpreter needs. A package published only as source
    (pyspark) is built into a wheel here, which must be pure Python to install there. `deps=False`: the
    packages alone, for one whose dependencies the image already has or never imports.

    pip chooses each wheel for the images (`--python-version`, `--platform`), but judges dependencies'
    environment markers by the host's Python (a host on 3.13 would skip psycopg's typing-extensions),
    so the dependencies are walked here, each one's markers judged for the images' interpreter.

    `provided`: packages (canonical name: version) the image has already, neither fetched nor walked; a
    requirement their version does not meet is a conflict.

    A package two others require in different ranges (apache-flink's numpy>=1.22.4, apache-beam's numpy<1.25)
    is chosen first for the range met first; when a later range excludes that choice, the walk starts over with
    the package chosen within every range met; where no version meets them all, the package that asked for the
    later range is chosen again, older (pandas 3 wants numpy 2). Each download is done once. A conflict is where
    a requirement given here cannot be met. Returns the wheels chosen, the requirements' and their
    dependencies'."""
    dest.mkdir(parents=True, exist_ok=True)
    narrowed: dict[str, SpecifierSet] = {}  # the versions a package may be chosen from, after a conflict
    fetched: dict[str, Path | None] = {}  # by requirement: a walk started over downloads nothing again
    for _ in range(MOST_WALKS):
        chosen = _walk([Requirement(text) for text in requirements], dest, log, deps, provided or {}, narrowed,
                       fetched)
        if chosen is not None:
            check_image_wheels(dest)
            return list(chosen.values())
    raise ImageBuildFailed(f"the images' Python packages {', '.join(requirements)} do not resolve in {MOST_WALKS} "
                           f"walks of their dependencies; log: {log}")


MOST_WALKS = 60  # a walk starts over at each conflict (fetch_wheels): a dependency that never settles is an error


def _walk(requirements: list[Requirement], dest: Path, log: Path, deps: bool, provided: Mapping[str, str],
          narrowed: dict[str, SpecifierSet], fetched: dict[str, Path | None]) -> dict[str, Path] | None:
    """One walk of `requirements` and their dependencies, breadth first: the wheel chosen for each package, or
    None when a conflict changed what a package may be chosen from (`narrowed`), to walk again."""
    chosen: dict[str, Path] = {}
    ranges: dict[str, SpecifierSet] = {}  # every range met for each package in this walk
    pending: list[tuple[Requirement, str | None]] = [(requirement, None) for requirement in requirements]
    while pending:
        requirement, requirer = pending.pop(0)
        name = canonicalize_name(requirement.name)
        if name in provided:
            if not requirement.specifier.contains(provided[name], prereleases=True):
                raise ImageBuildFailed(f"{requirement} is needed, and the image has {name} {provided[name]}")
            continue
        ranges[name] = ranges.get(name, SpecifierSet()) & requirement.specifier
        if name not in chosen:
            chosen[name] = _fetch_narrowed(requirement, narrowed.get(name), fetched, dest, log)
            if deps:
                pending += [(dependency, name) for dependency in _dependencies(chosen[name], requirement.extras)]
        version = parse_wheel_filename(chosen[name].name)[1]
        if not requirement.specifier.contains(version, prereleases=True):
            _settle(name, requirement, requirer, ranges[name], chosen, narrowed, fetched, dest, log)
            return None
    return chosen


def _settle(name: str, requirement: Requirement, requirer: str | None, every: SpecifierSet, chosen: dict[str, Path],
            narrowed: dict[str, SpecifierSet], fetched: dict[str, Path | None], dest: Path, log: Path) -> None:
    """`requirement` (of `requirer`'s; None: given) is not met by the version of `name` chosen: choose `name`
    within `every` range met for it, else `requirer` older than its choice; a given requirement that cannot
    be met is a conflict."""
    conflict = f"the images' Python packages conflict: {requirement} is needed, {chosen[name].name} was chosen"
    within = every & narrowed.get(name, SpecifierSet())
    if within != narrowed.get(name):
        try:
            _fetch_narrowed(requirement, within, fetched, dest, log)
        except ImageBuildFailed:  # no version in every range
            pass
        else:
            narrowed[name] = within
            return
    if requirer is None:
        raise ImageBuildFailed(f"{conflict}; log: {log}")
    older = SpecifierSet(f"!={parse_wheel_filename(chosen[requirer].name)[1]}")
    narrowed[requirer] = narrowed.get(requirer, SpecifierSet()) & older


def _fetch_narrowed(requirement: Requirement, narrowed: SpecifierSet | None, fetched: dict[str, Path | None],
                    dest: Path, log: Path) -> Path:
    """`requirement`'s wheel (`_fetch_one`), in the `narrowed` ranges too; each requirement fetched once, or
    failed once (None)."""
    if narrowed is not None:
        requirement = Requirement(str(requirement))
        requirement.specifier &= narrowed
    key = str(requirement)
    if key not in fetched:
        fetched[key] = None
        fetched[key] = _fetch_one(requirement, dest, log)
    found = fetched[key]
    if found is None:
        raise ImageBuildFailed(f"no wheel of {requirement} for the images' Python {_image_python()}; log: {log}")
    return found


def _fetch_one(requirement: Requirement, dest: Path, log: Path) -> Path:
    """The wheel of `requirement` alone for the images, downloaded into `dest` (or built there)."""
    try:
        run_logged([sys.executable, "-m", "pip", "download", "--no-deps", *pip_target(), "--dest", str(dest),
                    str(requirement)], log, f"pip download {requirement}")
    except ImageBuildFailed:  # no wheel for the images: a source archive, built on the host
        return _build_pure_wheel(str(requirement), dest, log)
    name = canonicalize_name(requirement.name)
    tags = image_tags()
    found = [(version, wheel) for wheel in dest.glob("*.whl")
             for wanted, version, _, wheel_tags in [parse_wheel_filename(wheel.name)]
             if wanted == name and tags.intersection(wheel_tags)
             and requirement.specifier.contains(version, prereleases=True)]
    if not found:
        raise ImageBuildFailed(f"pip download {requirement} left no wheel of it in {dest}; log: {log}")
    return max(found)[1]


def _dependencies(wheel: Path, extras: set[str]) -> list[Requirement]:
    """What `wheel` requires on the images' interpreter, with the extras asked of it."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        headers = email.parser.BytesHeaderParser().parsebytes(archive.read(metadata))
    needed = []
    for text in headers.get_all("Requires-Dist") or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({**image_environment(), "extra": extra}) for extra in {"", *extras}):
            requirement.marker = None
            needed.append(requirement)
    return needed


# Source archives whose wheel is mostly archives already (pyspark's: 400 MB of jars; apache-flink-libraries':
# 230 MB), built into a wheel that stores its files rather than deflating them again: the build takes half as
# long (18 s against 37 s alone on 2 cores, and it runs beside the other images' builds), the wheel is a tenth larger
STORED_WHEELS = frozenset({"pyspark", "apache-flink-libraries"})
# No C compiler for a build on the host: a package whose C extension is optional (crcmod's, for apache-beam)
# then builds its pure-Python wheel, which the images' interpreter installs; one built against the host's
# Python would be refused
NO_COMPILER = {"CC": "false", "CXX": "false"}


def _build_pure_wheel(requirement: str, dest: Path, log: Path) -> Path:
    """Build `requirement` from its source archive with the host's Python, its optional C extensions left out;
    the wheel must be pure Python."""
    name = Requirement(requirement).name
    stored = canonicalize_name(name) in STORED_WHEELS
    stored_option = ["--config-settings=--build-option=--compression=stored"] if stored else []
    with tempfile.TemporaryDirectory(dir=dest.parent) as built:
        run_logged([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-binary", name, "--wheel-dir", built,
                    *stored_option, requirement], log, f"pip wheel {requirement}", env={**os.environ, **NO_COMPILER})
        wheel = next(Path(built).glob("*.whl"))
        if not _installs(wheel, image_tags()):
            raise ImageBuildFailed(f"{requirement} has no wheel for the images' Python {_image_python()} and "
                                   "builds only for the host's "
                                   f"({wheel.name}); log: {log}")
        return Path(shutil.move(str(wheel), dest / wheel.name))


def check_image_wheels(folder: Path) -> None:
    """Refuse a folder holding a wheel the images' interpreter cannot install (one built for the host's)."""
    tags = image_tags()
    foreign = sorted(w.name for w in folder.glob("*.whl") if not _installs(w, tags))
    if foreign:
        raise ImageBuildFailed(f"wheels in {folder} do not install on the images' Python {_image_python()}: "
                               f"{', '.join(foreign)}")


def _installs(wheel: Path, tags: frozenset[Tag]) -> bool:
    """Whether the images' interpreter (its `tags`) installs `wheel`."""
    return bool(tags.intersection(parse_wheel_filename(wheel.name)[3]))


def _image_python() -> str:
    return ".".join(map(str, versions.IMAGE_PYTHON))


def fetch_maven_coordinates(coordinates: list[str], dest: Path, log: Path) -> None:
    """Resolve Maven coordinates (group:artifact:version) and their runtime dependencies into `dest`, in the
    repository's layout (group/path/artifact/version/file.jar), so that each jar's coordinate can be read
    back from where it lies."""
    work = dest.parent
    work.mkdir(parents=True, exist_ok=True)
    dependencies = "".join(
        f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>"
        "</dependency>" for group, artifact, version in (c.split(":") for c in coordinates))
    pom = work / "pom.xml"
    pom.write_text('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
                   "<groupId>eo-harness</groupId><artifactId>sink-dependencies</artifactId><version>1</version>"
                   f"<packaging>pom</packaging><dependencies>{dependencies}</dependencies></project>\n")
    _copy_dependencies(pom, dest, log, "maven " + " ".join(coordinates), ["-Dmdep.useRepositoryLayout=true"])
