"""Every image the cluster needs, built locally with no registry; tags are hashes of their inputs."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path

from docker.errors import ImageNotFound

from harness import versions
from harness.cluster import rootfs
from harness.cluster.engine import docker_client
from harness.cluster.fetch import fetch_go_binary, fetch_maven_jars, fetch_wheels
from harness.errors import ImageBuildFailed
from harness.progress import say, step

PACKAGE = Path(str(resources.files("harness")))  # a clone's harness/ or an installed one: the same files
DOCKERFILES = PACKAGE / "images"  # package data: the image build inputs
PREFIX = "eo-harness"


def cache_dir() -> Path:
    """Build inputs kept across runs and checkouts (downloads are the slow part)."""
    return Path(os.environ.get("HARNESS_CACHE") or Path.home() / ".cache" / "eo-harness")


@dataclass(frozen=True)
class Image:
    """One image: its name, what it is built from, and how its build context is staged."""

    name: str
    pins: tuple[str, ...]
    stage: Callable[[Path, Path], None] | None  # (context dir, log) -> None; None for the base
    parent: Image | None = None

    @property
    def tag(self) -> str:
        return f"{PREFIX}-{self.name}:{self.digest}"

    @property
    def digest(self) -> str:
        """A hash of everything that goes into the image, so unchanged inputs mean no rebuild."""
        sha = hashlib.sha256()
        sha.update("\n".join(self.pins).encode())
        for path in self._source_files():
            sha.update(str(path.relative_to(PACKAGE.parent)).encode())  # the same tag for both
            sha.update(path.read_bytes())
        if self.parent is not None:
            sha.update(self.parent.tag.encode())
        return sha.hexdigest()[:12]

    def _source_files(self) -> list[Path]:
        if self.parent is None:
            return [Path(rootfs.__file__), Path(versions.__file__)]
        return sorted(p for p in (DOCKERFILES / self.name).rglob("*") if p.is_file())


def _stage_kafka(version: str, context: Path, log: Path) -> None:
    with _fetching("Kafka", version, versions.KAFKA_VERSIONS):
        fetch_maven_jars(
            DOCKERFILES / "kafka" / "pom.xml",
            context / "libs",
            {"kafka.version": version, "log4j.version": versions.LOG4J, "scala.binary": KAFKA_SCALA},
            log,
        )


def _stage_spark(stack: versions.Stack, context: Path, log: Path) -> None:
    wheels = cache_dir() / "wheels"
    with _fetching("Spark", stack.spark, versions.SPARK_VERSIONS):
        fetch_wheels([f"pyspark=={stack.spark}"], wheels, log)
        fetch_maven_jars(
            DOCKERFILES / "spark" / "pom.xml",
            context / "jars",
            {"spark.version": stack.spark, "scala.binary": stack.scala, "delta.version": stack.delta},
            log,
        )
    (context / "wheels").mkdir()
    for wheel in [*wheels.glob(f"pyspark-{stack.spark}-*.whl"), *wheels.glob("py4j-*.whl")]:
        shutil.copy2(wheel, context / "wheels")


@contextmanager
def _fetching(name: str, version: str, known: tuple[str, ...]) -> Iterator[None]:
    """A release that cannot be fetched is one line naming it and the releases known to work."""
    try:
        yield
    except ImageBuildFailed as error:
        where = str(error).splitlines()[0]
        raise ImageBuildFailed(f"{name} {version} cannot be fetched here (known to work: {', '.join(known)}); "
                               f"{where}") from None


def _stage_toxiproxy(context: Path, log: Path) -> None:
    fetch_go_binary(
        versions.TOXIPROXY_MODULE, versions.TOXIPROXY, "cmd/server", context / "toxiproxy-server", log
    )


KAFKA_SCALA = "2.13"  # Kafka's own Scala build; Spark's follows its version (Stack.scala)
BASE = Image("base", (versions.DEBIAN_SUITE, *versions.DEBIAN_PACKAGES, *versions.image_python_requirements()), None)
TOXIPROXY = Image("toxiproxy", (versions.TOXIPROXY_MODULE, versions.TOXIPROXY), _stage_toxiproxy, BASE)


@dataclass(frozen=True)
class Images:
    """The images of one run's versions (see harness.versions)."""

    stack: versions.Stack
    base: Image
    kafka: Image
    spark: Image
    toxiproxy: Image

    @property
    def all(self) -> tuple[Image, ...]:
        return (self.base, self.kafka, self.spark, self.toxiproxy)


def current() -> Images:
    """The images for the Kafka and Spark versions this run asked for (the defaults when it asked none)."""
    stack = versions.stack()
    kafka = Image("kafka", (stack.kafka, versions.LOG4J, KAFKA_SCALA), partial(_stage_kafka, stack.kafka), BASE)
    spark = Image("spark", (stack.spark, stack.connector, stack.delta_jar), partial(_stage_spark, stack), BASE)
    return Images(stack, BASE, kafka, spark, TOXIPROXY)


def present(image: Image) -> bool:
    """Whether the engine already has this exact image."""
    try:
        docker_client().images.get(image.tag)
        return True
    except ImageNotFound:
        return False


def missing() -> list[Image]:
    """The images that a cluster start would need built first."""
    return [image for image in current().all if not present(image)]


def build_all() -> None:
    """Build every image of this run's versions that is not present; an unchanged tree builds nothing."""
    started = time.monotonic()
    wanted = current()
    say(f"images for Kafka {wanted.stack.kafka}, Spark {wanted.stack.spark}")
    with _building():
        for image in wanted.all:
            if present(image):
                say(f"image {image.tag}: present")
                continue
            _build(image)
    say(f"images ready in {time.monotonic() - started:.1f} s")


@contextmanager
def _building() -> Iterator[None]:
    """One build at a time on this machine: pytest-xdist workers or certify's workers that find an image
    missing at once would share its build folder. The second waits, then finds the image present."""
    lock = cache_dir() / "build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("images: another process is building them; waiting for it")
            fcntl.flock(held, fcntl.LOCK_EX)
        yield


def _build(image: Image) -> None:
    work = cache_dir() / "build" / image.name
    work.mkdir(parents=True, exist_ok=True)
    log = cache_dir() / "logs" / f"{image.name}-{image.digest}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    with step(f"image {image.tag}: build (log: {log})"):
        if image.stage is None:
            rootfs.build_base(image.tag, work, cache_dir() / "wheels", log)
            return
        context = work / "context"
        if context.exists():
            shutil.rmtree(context)
        shutil.copytree(DOCKERFILES / image.name, context)
        with step(f"{image.name}: fetch inputs on the host"):
            image.stage(context, log)
        assert image.parent is not None
        _docker_build(image, context, log)
        shutil.rmtree(context)


def _docker_build(image: Image, context: Path, log: Path) -> None:
    """`docker build` with the parent tag as BASE; progress lines per Dockerfile step."""
    api = docker_client().api
    assert image.parent is not None
    with log.open("a") as out:
        for chunk in api.build(
            path=str(context), tag=image.tag, buildargs={"BASE": image.parent.tag},
            rm=True, forcerm=True, decode=True, labels={PREFIX: "image"},
        ):
            if "stream" in chunk:
                out.write(chunk["stream"])
                if chunk["stream"].startswith("Step "):
                    say(f"  {image.name}: {chunk['stream'].strip()[:100]}")
            if "error" in chunk:
                out.write(chunk["error"] + "\n")
                raise ImageBuildFailed(
                    f"step 'docker build {image.name}' failed: {chunk['error'].strip()}; log: {log}"
                )
