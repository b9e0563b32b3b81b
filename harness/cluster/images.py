"""Every image the cluster needs: pulled from the `registry` setting's registry when it has them (no build
tools needed), else built locally; tags are hashes of their inputs (harness.cluster.image_inputs), the same
on every host. An image older than the `image_max_age` setting (or than its parent) is built again under the
same tag. It is over 400 lines: the images' definitions (the Flink image's among them) and how they are had
(pulled, built at once, renewed) share their tags and their build lock; splitting them is left for later."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path

from docker.errors import ImageNotFound

from harness import versions
from harness.cluster import apt_sources, root_access, rootfs
from harness.cluster import registry as registries
from harness.cluster.engine import docker_client
from harness.cluster.fetch import image_wheels
from harness.cluster.image_inputs import (
    DOCKERFILES,
    KAFKA_SCALA,
    PACKAGE,
    cache_dir,
    stage_flink,
    stage_kafka,
    stage_spark,
    stage_toxiproxy,
    store_jars,
    store_wheels,
)
from harness.errors import ImageBuildFailed
from harness.output.registry import store, stores
from harness.progress import say, step
from harness.settings import from_environment

PREFIX = "eo-harness"


@dataclass(frozen=True)
class Image:
    """One image: its name, what it is built from, and how its build context is staged. A store's images are
    its own (`Store.images`), their inputs in its package (`inputs`), so that a store from another package
    brings its servers' images as the harness's own stores do."""

    name: str
    pins: tuple[str, ...]
    stage: Callable[[Path, Path], None] | None  # (context dir, log) -> None; None for the base
    parent: Image | None = None
    tools: tuple[str, ...] = ()  # the programs on PATH that building it takes
    inputs: Path | None = None  # its Dockerfile's folder, copied as its build context: harness/images/<name> if None

    @property
    def folder(self) -> Path:
        return self.inputs or DOCKERFILES / self.name

    @property
    def tag(self) -> str:
        return f"{PREFIX}-{self.name}:{self.digest}"

    @property
    def digest(self) -> str:
        """A hash of everything that goes into the image, so unchanged inputs mean no rebuild."""
        sha = hashlib.sha256()
        sha.update("\n".join(self.pins).encode())
        for name, path in self._source_files():
            sha.update(name.encode())  # where its package lives changes no tag: a clone's or an installed one
            sha.update(path.read_bytes())
        if self.parent is not None:
            sha.update(self.parent.tag.encode())
        return sha.hexdigest()[:12]

    def _source_files(self) -> list[tuple[str, Path]]:
        """The files it is built from, each with the name it is hashed by."""
        if self.parent is None:  # its pins name every version it takes: another pin changed rebuilds nothing
            source = Path(rootfs.__file__)
            return [(str(source.relative_to(PACKAGE.parent)), source)]
        return sorted((f"{self.name}/{p.relative_to(self.folder)}", p) for p in self.folder.rglob("*") if p.is_file())


MAVEN = ("mvn", "java")
# its tools are those of the way it gets root (debootstrap, or mmdebstrap unprivileged): own_tools_missing
BASE = Image("base", (versions.DEBIAN_SUITE, *versions.DEBIAN_PACKAGES, *versions.image_python_requirements()), None)
TOXIPROXY = Image("toxiproxy", (versions.TOXIPROXY_MODULE, versions.TOXIPROXY), stage_toxiproxy, BASE, ("go",))


@cache
def flink_image(version: str) -> Image:
    """Apache Flink `version` (PyFlink from PyPI, Flink's jars with it) with its line's Kafka connector's jars in
    its lib/ (harness/images/flink); BadInput for a line with no connector pinned. Built by `images build`, not for
    a Spark run (`Images.every`, not `Images.cluster`). The same Image at every call (its stage a partial: two
    would differ), so `flink_image(v) in wanted` holds."""
    connector = versions.flink_kafka_connector(version)
    return Image("flink", (version, connector), partial(stage_flink, version), BASE, MAVEN)


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
        """What a run of any output on the volume may start: the cluster's and the servers stores start there
        (PostgreSQL's)."""
        return with_parents((*self.cluster, *stores_images(("volume",))))

    @property
    def every(self) -> tuple[Image, ...]:
        """What `images build` builds and `images push` pushes: every store's servers on every place it may live,
        and Flink's (a host that pulls cannot build them on first use, and CI builds them up front, not inside a
        test)."""
        return with_parents((*self.cluster, *stores_images(None), flink_image(self.stack.flink)))

    @property
    def cluster(self) -> tuple[Image, ...]:
        """What every cluster starts, whatever its output."""
        return (self.base, self.kafka, self.spark, self.toxiproxy)


def current(stack: versions.Stack | None = None) -> Images:
    """The images for `stack`, else for the Kafka and Spark versions this run asked for (the defaults when it
    asked none)."""
    stack = stack or versions.stack()
    kafka = Image("kafka", (stack.kafka, versions.LOG4J, KAFKA_SCALA), partial(stage_kafka, stack.kafka), BASE, MAVEN)
    spark = Image("spark", (stack.spark, stack.connector, *store_jars(stack), *store_wheels(stack)),
                  partial(stage_spark, stack), BASE, MAVEN)
    return Images(stack, BASE, kafka, spark, TOXIPROXY)


def stores_images(places: tuple[str, ...] | None) -> tuple[Image, ...]:
    """The images every installed store (harness.output.registry) starts for a table on one of `places` (None:
    on any it may live on)."""
    return tuple(image for found in stores() for where in found.stores if places is None or where in places
                 for image in found.images(where))


def with_parents(wanted: tuple[Image, ...]) -> tuple[Image, ...]:
    """These images, each once and after its parent (a parent not asked for comes with its child)."""
    def lineage(image: Image) -> tuple[Image, ...]:
        return (*(lineage(image.parent) if image.parent is not None else ()), image)

    return tuple(dict.fromkeys(ancestor for image in wanted for ancestor in lineage(image)))


def present(image: Image) -> bool:
    """Whether the engine already has this exact image, no older than the `image_max_age` setting and than
    its parent: an older one is rebuilt, so that the base takes Debian's security updates and its children
    the rebuilt base."""
    built = _created(image)
    parent = _created(image.parent) if image.parent is not None else None
    return built is not None and fresh(built, parent, time.time(), from_environment("image_max_age"))


def fresh(built: float, parent_built: float | None, now: float, max_age_days: float) -> bool:
    """Whether an image built at `built` serves on: younger than `max_age_days`, and built after its parent
    (None: it has none, or the engine has none to compare)."""
    return now - built <= max_age_days * 86400 and (parent_built is None or built >= parent_built)


def _created(image: Image) -> float | None:
    """When the engine's copy of `image` was built (seconds since the epoch), None when it has none."""
    try:
        created = docker_client().images.get(image.tag).attrs["Created"]
    except ImageNotFound:
        return None
    return datetime.fromisoformat(created[:19]).replace(tzinfo=UTC).timestamp()  # Docker gives nanoseconds


def missing(stack: versions.Stack | None = None) -> list[Image]:
    """The images that a cluster start would need built first (an old one still serves: `build_all` renews it)."""
    return [image for image in current(stack).cluster if _created(image) is None]


def for_output(output: str, where: str, stack: versions.Stack | None = None) -> tuple[Image, ...]:
    """The images a run into `output` (its table on `where`: volume, s3) starts: every cluster's, then those its
    store starts (harness.output.registry), parents first."""
    return with_parents((*current(stack).cluster, *store(output).images(where)))


def own_tools_missing(image: Image) -> list[str]:
    """The programs building `image` itself takes that this host lacks; for the base, those of the way its
    root file system gets root (harness.cluster.root_access), and root itself where no way gives it; for the
    base and an image of Debian packages (apt-get's), a Debian archive where none is named."""
    if image.parent is None:
        access = root_access.current()
        return [tool for tool in access.tools if shutil.which(tool) is None] + access.lacks() + apt_sources.lacks()
    lacking = [tool for tool in image.tools if shutil.which(tool) is None]
    return lacking + (apt_sources.lacks() if "apt-get" in image.tools else [])


def tools_missing(image: Image) -> list[str]:
    """The programs building `image` takes that this host lacks (its parent's too, when that is not present)."""
    lacking = own_tools_missing(image)
    if image.parent is not None and not present(image.parent):
        lacking += [tool for tool in tools_missing(image.parent) if tool not in lacking]
    return lacking


def build_all(stack: versions.Stack | None = None) -> None:
    """Every image of this run's versions (or `stack`'s) present, every store's servers' too, built at once:
    pulled from the registry setting's registry when it has them, built here otherwise; an unchanged tree pulls
    and builds nothing."""
    wanted = current(stack)
    say(f"images for Kafka {wanted.stack.kafka}, Spark {wanted.stack.spark}, Flink {wanted.stack.flink}, every "
        "store's servers' too")
    _have(wanted.every)


def build_for(output: str, where: str, stack: versions.Stack | None = None) -> None:
    """The images a run into `output` on `where` starts present (`for_output`), as `build_all` has them: a run
    into Kafka builds or pulls no image of a table's server."""
    found = current(stack)
    say(f"images for Kafka {found.stack.kafka}, Spark {found.stack.spark}, output {output}"
        + (f" on {where}" if store(output).table else ""))
    _have(for_output(output, where, found.stack))


def needed(image: Image) -> str:
    """An image only some runs start (a store's server's), had as `build_all` has the others, where the store
    starts it: present already when the session knew the run's output (`build_for`); its tag."""
    _have(with_parents((image,)))
    return image.tag


def _have(wanted: tuple[Image, ...]) -> None:
    """These images present (parents first): pulled from the registry setting's registry when it has them,
    built here otherwise, an old one built again."""
    started = time.monotonic()
    registry = registries.checked_registry(from_environment("registry")) if from_environment("registry") else ""
    if all(present(image) for image in wanted):  # no lock to wait for: another build makes other tags
        say(f"images present: {', '.join(image.tag for image in wanted)}")
        return
    with _building():
        to_build, absent = [], []
        for image in wanted:
            if present(image):
                say(f"image {image.tag}: present")
            elif _created(image) is not None:
                lacking = tools_missing(image)
                age = f"older than {from_environment('image_max_age'):g} days or than its parent"
                if lacking:
                    say(f"image {image.tag}: {age}, kept: building it takes {', '.join(lacking)} (not on PATH)")
                else:
                    say(f"image {image.tag}: {age}; building it again")
                    to_build.append(image)
            else:
                absent.append(image)
        if registry and absent:
            say(f"images: pulling from {registry} those it has")
        to_build += _pull_at_once(absent, registry)
        _build_at_once(sorted(to_build, key=wanted.index))  # parents first
    say(f"images ready in {time.monotonic() - started:.1f} s")


def _pull_at_once(absent: list[Image], registry: str) -> list[Image]:
    """Pull these images from `registry` at once (the engine fetches a layer two of them share once, and
    unpacks one while it downloads another): those it lacks, to build here, each checked once every pull
    has ended, so that a parent pulled meanwhile counts as present."""
    whys: list[str | None] = ["no registry given (the `registry` setting)"] * len(absent)
    if registry and absent:
        with ThreadPoolExecutor(max_workers=len(absent), thread_name_prefix="pull") as pool:
            whys = list(pool.map(partial(_pull, registry=registry), absent))
    lacking = [(image, why) for image, why in zip(absent, whys, strict=True) if why is not None]
    for image, why in lacking:
        _check_buildable(image, why)
    return [image for image, _ in lacking]


def _pull(image: Image, registry: str) -> str | None:
    """Pull `image` from `registry` (said): None when it came, else why not."""
    pulling = time.monotonic()
    why = registries.pull(registry, image.tag)
    if why is None:
        say(f"image {image.tag}: pulled from {registry} in {time.monotonic() - pulling:.1f} s")
    return why


def _check_buildable(image: Image, why: str) -> None:
    """Say that `image` is built here since `why`; bad news in one line when this host cannot build it
    (what it lacks)."""
    lacking = tools_missing(image)
    if lacking:
        raise ImageBuildFailed(f"image {image.tag} cannot be had here: {why}, and building it takes "
                               f"{', '.join(lacking)} (not on PATH); push the images from a host that builds them "
                               "(`eo-harness images push REGISTRY`) and give that registry, or install those")
    say(f"image {image.tag}: {why}; building it")


def _build_at_once(to_build: list[Image]) -> None:
    """Build these images at once: each fetches its inputs from its own source (Debian, Maven, Go's proxy,
    PyPI) while the others do, and waits for its parent's build only for its `docker build`. The first
    failure is raised once every build has ended (a thread cannot be stopped halfway)."""
    if not to_build:
        return
    with ThreadPoolExecutor(max_workers=len(to_build), thread_name_prefix="image") as pool:
        builds: dict[str, Future[None]] = {}
        for image in to_build:  # parents first (`Images.every`)
            parent = builds.get(image.parent.name) if image.parent is not None else None
            builds[image.name] = pool.submit(_build, image, parent)
        wait(builds.values())
    for build in builds.values():
        build.result()


def remove_all() -> None:
    """Every image of this run's versions removed from the engine, children first (their parents' layers go
    with the last): for the benchmarks that measure a build from nothing."""
    client = docker_client()
    for image in reversed(current().every):
        try:
            client.images.remove(image.tag, force=True)
        except ImageNotFound:
            pass


def push_all(registry: str) -> None:
    """Every image of this run's versions, every store's servers' too (a host that pulls
    cannot build them on first use), built or pulled first where missing, pushed to `registry`."""
    build_all()
    for image in current().every:
        seconds = registries.push(registry, image.tag)
        say(f"image {image.tag}: pushed to {registry} in {seconds:.1f} s")


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


def _build(image: Image, parent: Future[None] | None = None) -> None:
    """Build `image`: its inputs fetched on the host, then (once `parent`, its parent's build, if any, is
    done) its `docker build`."""
    work = cache_dir() / "build" / image.name
    work.mkdir(parents=True, exist_ok=True)
    log = cache_dir() / "logs" / f"{image.name}-{image.digest}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    with step(f"image {image.tag}: build (log: {log})"):
        if image.stage is None:
            rootfs.build_base(image.tag, work, image_wheels(cache_dir()), cache_dir() / "debootstrap", log)
            return
        context = work / "context"
        if context.exists():
            shutil.rmtree(context)
        shutil.copytree(image.folder, context)
        if parent is not None:  # its parent's build is the longest: this one's fetch takes what CPU it leaves
            yield_cpu()
        with step(f"{image.name}: fetch inputs on the host"):
            image.stage(context, log)
        assert image.parent is not None
        if parent is not None and parent.exception() is not None:  # that failure is raised from its own build
            raise ImageBuildFailed(f"image {image.tag}: not built, as its parent {image.parent.tag} failed")
        _docker_build(image, context, log)
        shutil.rmtree(context)


FETCH_NICENESS = 10  # below the base's debootstrap: fetching at once must not slow the build everything waits on


def yield_cpu() -> None:
    """Lower this thread's scheduling priority, and so that of every process it starts (Linux: a nice value
    is a thread's, and a child process inherits its creator's). Fetches are mostly CPU here (Go's compile,
    pyspark's wheel, Maven): at equal priority, on two cores they slowed debootstrap more than they saved."""
    thread = threading.get_native_id()
    os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + FETCH_NICENESS)


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
