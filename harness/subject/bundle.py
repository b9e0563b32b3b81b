"""A sink's dependencies resolved on the host into the files that ship: wheels for the Spark image's
Python and platform (as the images' own are fetched: harness.cluster.fetch), and the jars of Maven
coordinates with their runtime dependencies. What the image has already (pyspark, py4j, the outputs'
packages, Spark's and the connectors' jars) is not shipped again, and is named as provided. Cached by
content in the harness's cache, so every row, worker and later run ships the same bytes, fetched once.

Resolved after the images are built and before any cluster starts: a package with no wheel for the
image, or a coordinate that does not resolve, is BadInput naming it."""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from harness import versions
from harness.cluster.engine import docker_client
from harness.cluster.fetch import fetch_maven_coordinates, fetch_wheels
from harness.cluster.image_inputs import cache_dir
from harness.errors import BadInput, HarnessError
from harness.progress import say
from harness.subject.dependencies import Dependencies

MANIFEST = "manifest.json"
IMAGE_LISTING = ('python -c "import importlib.metadata as m, json; print(json.dumps({d.metadata[\'Name\']: d.version '
                 'for d in m.distributions()}))"; ls "$SPARK_HOME/jars"')


@dataclass(frozen=True)
class Bundle:
    """What ships with a sink: the wheels and jars (each with its version and sha256) in `folder` on the
    host, what the image provides instead, and the Spark settings. `digest` names the files' set."""

    digest: str
    folder: Path | None = None
    wheels: tuple[dict, ...] = ()  # {"name", "version", "file", "sha256"}
    jars: tuple[dict, ...] = ()  # {"coordinate", "file", "sha256"}
    provided: tuple[str, ...] = ()  # "name version" the image has, asked for and not shipped
    conf: tuple[tuple[str, str], ...] = field(default=())
    asked: Dependencies = field(default_factory=Dependencies)  # as given: what a replay gives again

    @property
    def files(self) -> bool:
        """Whether anything is to be copied into the cluster."""
        return bool(self.wheels or self.jars)

    def paths(self) -> tuple[list[Path], list[Path]]:
        """Its wheels' and jars' files on the host."""
        assert self.folder is not None or not self.files
        folder = self.folder or Path()
        return [folder / "wheels" / w["file"] for w in self.wheels], [folder / "jars" / j["file"] for j in self.jars]

    def to_dict(self) -> dict:
        """As the result and the certificate list it: part of what was certified."""
        return {"python": list(self.wheels), "jars": list(self.jars), "provided_by_image": list(self.provided),
                "conf": dict(self.conf)}


_RESOLVED: dict[tuple[Dependencies, str], Bundle] = {}  # this process's, by dependencies and image


def resolved(dependencies: Dependencies, image: str) -> Bundle:
    """The bundle of `dependencies` for the Spark image `image` (a tag): from this process's memory, else
    the cache, else fetched now."""
    key = (dependencies, image)
    if key not in _RESOLVED:
        _RESOLVED[key] = _resolve(dependencies, image)
    return _RESOLVED[key]


def _resolve(dependencies: Dependencies, image: str) -> Bundle:
    if not (dependencies.python or dependencies.packages):
        return Bundle(_digest({"conf": dependencies.conf}), conf=dependencies.conf, asked=dependencies)
    identity = image_id(image)
    python, jars = image_contents(image, identity)
    key = _digest({"python": dependencies.python, "packages": dependencies.packages, "image": identity,
                   "interpreter": versions.IMAGE_PYTHON, "machine": platform.machine()})
    folder = cache_dir() / "dependencies" / key
    if not (folder / MANIFEST).is_file():
        _fetch(dependencies, folder, python, jars)
    manifest = json.loads((folder / MANIFEST).read_text())
    return Bundle(key, folder, tuple(manifest["wheels"]), tuple(manifest["jars"]), tuple(manifest["provided"]),
                  dependencies.conf, dependencies)


def _fetch(dependencies: Dependencies, folder: Path, python: dict[str, str], image_jars: list[str]) -> None:
    """Fetch into a new folder beside `folder`, then move it there whole: a run interrupted leaves no half."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    log = folder.parent / f"{folder.name}.log"
    try:
        provided_python = {canonicalize_name(name): version for name, version in python.items()}
        wheels: list[dict] = []
        asked = sorted({canonicalize_name(Requirement(text).name) for text in dependencies.python})
        provided = [f"{name} {provided_python[name]}" for name in asked if name in provided_python]
        if dependencies.python:
            say(f"fetching Python packages for the Spark image: {', '.join(dependencies.python)}")
            try:
                fetch_wheels(list(dependencies.python), work / "wheels", log, provided=provided_python)
            except HarnessError as error:
                raise BadInput(f"--py-package/--requirements: no wheel for the Spark image's Python "
                               f"{'.'.join(map(str, versions.IMAGE_PYTHON))} on Linux {platform.machine()}, or it "
                               f"does not resolve: {_first_line(error)}") from None
            wheels = [_wheel(path) for path in sorted((work / "wheels").glob("*.whl"))]
        jars: list[dict] = []
        if dependencies.packages:
            say(f"fetching jars: {', '.join(dependencies.packages)}")
            try:
                fetch_maven_coordinates(list(dependencies.packages), work / "maven", log)
            except HarnessError:
                raise BadInput(f"--packages {','.join(dependencies.packages)}: does not resolve on Maven Central"
                               f"{_maven_reason(log)}; log: {log}") from None
            jars, image_has = _jars(work / "maven", work / "jars", image_jars)
            provided += image_has
        (work / MANIFEST).write_text(json.dumps({"wheels": wheels, "jars": jars, "provided": provided}, indent=1))
        shutil.rmtree(work / "maven", ignore_errors=True)
        try:
            work.rename(folder)
        except OSError:  # another process (a worker of the same run) put the same bundle there first
            if not (folder / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wheel(path: Path) -> dict:
    name, version, _, _ = parse_wheel_filename(path.name)
    return {"name": str(name), "version": str(version), "file": path.name, "sha256": _sha256(path)}


def _jars(layout: Path, dest: Path, image_jars: list[str]) -> tuple[list[dict], list[str]]:
    """The jars Maven laid out (group/path/artifact/version/file.jar) moved flat into `dest`, each with its
    coordinate; those whose artifact the image has (any version) left out, named as provided."""
    dest.mkdir(parents=True, exist_ok=True)
    shipped, provided = [], []
    for jar in sorted(layout.rglob("*.jar")):
        parts = jar.relative_to(layout).parts
        group, artifact, version = ".".join(parts[:-3]), parts[-3], parts[-2]
        has = next((name for name in image_jars if _same_artifact(name, artifact)), None)
        if has is not None:
            provided.append(f"{group}:{artifact}:{version} (the image has {has})")
            continue
        shutil.move(str(jar), dest / jar.name)
        shipped.append({"coordinate": f"{group}:{artifact}:{version}", "file": jar.name,
                        "sha256": _sha256(dest / jar.name)})
    return shipped, provided


def _same_artifact(jar_name: str, artifact: str) -> bool:
    """Whether the image's jar `jar_name` is `artifact` of some version (`artifact-1.2.jar`, or `artifact.jar`
    where the image strips versions)."""
    stem = jar_name.removesuffix(".jar")
    return stem == artifact or (stem.startswith(f"{artifact}-") and stem[len(artifact) + 1:][:1].isdigit())


def image_contents(image: str, identity: str) -> tuple[dict[str, str], list[str]]:
    """The Python distributions (name: version) and Spark's jar file names the image has; asked of the image
    once (a container without a network), then kept in the cache by the image's id (`identity`)."""
    cached = cache_dir() / "dependencies" / f"image-{identity[:24]}.json"
    if not cached.is_file():
        output = docker_client().containers.run(image, ["sh", "-c", IMAGE_LISTING], remove=True,
                                                network_disabled=True).decode()
        first, _, rest = output.partition("\n")
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps({"python": json.loads(first), "jars": rest.split()}))
    contents = json.loads(cached.read_text())
    return contents["python"], contents["jars"]


def image_id(image: str) -> str:
    return str(docker_client().images.get(image).id).removeprefix("sha256:")


def _maven_reason(log: Path) -> str:
    """Maven's own words on what did not resolve, from its log."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))  # Maven's colours
    lines = [line.strip() for line in plain.splitlines()
             if "Could not" in line or "not found" in line or "Failed to" in line]
    return f" ({lines[-1][:300]})" if lines else ""


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=list).encode()).hexdigest()[:32]
