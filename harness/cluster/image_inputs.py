"""What goes into the images' builds, on the host: the package's build inputs (harness/images: Dockerfiles,
poms, scripts), the cache that keeps downloads across runs and checkouts, and each image's build context
staged from its own source (Kafka's and Spark's jars by Maven, pyspark's and the stores' wheels, Go binaries,
Debian packages). harness.cluster.images names the images, tags them by these inputs and builds them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from harness import versions
from harness.cluster.fetch import fetch_go_binary, fetch_maven_jars, fetch_wheels, image_wheels
from harness.errors import ImageBuildFailed
from harness.output.registry import stores

PACKAGE = Path(str(resources.files("harness")))  # a clone's harness/ or an installed one: the same files
DOCKERFILES = PACKAGE / "images"  # package data: the image build inputs
KAFKA_SCALA = "2.13"  # Kafka's own Scala build; Spark's follows its version (Stack.scala)


def cache_dir() -> Path:
    """Build inputs kept across runs and checkouts (downloads are the slow part)."""
    return Path(os.environ.get("HARNESS_CACHE") or Path.home() / ".cache" / "eo-harness")


def stage_kafka(version: str, context: Path, log: Path) -> None:
    """Kafka's jars of `version`, fetched by Maven into the context's libs/."""
    with _fetching("Kafka", version, versions.KAFKA_VERSIONS):
        fetch_maven_jars(
            DOCKERFILES / "kafka" / "pom.xml",
            context / "libs",
            {"kafka.version": version, "log4j.version": versions.LOG4J, "scala.binary": KAFKA_SCALA},
            log,
        )


STORES_MARK = "<!-- each store's jars"


def spark_pom(stack: versions.Stack) -> str:
    """The Spark image's pom: the Kafka connector's, with every store's jars for this Spark line."""
    template = (DOCKERFILES / "spark" / "pom.xml").read_text()
    dependencies = "".join(map(_dependency, store_jars(stack)))
    return template.replace(f"    {STORES_MARK}", dependencies + f"    {STORES_MARK}", 1)


def _dependency(jar: str) -> str:
    """`group:artifact:version`, then `!group:artifact` for each dependency of its own left out (`!*:*`: all)."""
    coordinates, *excluded = jar.split("!")
    group, artifact, version = coordinates.split(":")
    exclusions = "".join(f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
                         for g, a in (e.split(":") for e in excluded))
    return (f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{version}</version>"
            + (f"<exclusions>{exclusions}</exclusions>" if exclusions else "") + "</dependency>\n")


def store_jars(stack: versions.Stack) -> tuple[str, ...]:
    """The jars every store that runs on this Spark line needs."""
    return tuple(jar for store in stores() if not store.unsupported(stack) for jar in store.jars(stack))


def store_wheels(stack: versions.Stack) -> tuple[str, ...]:
    """The Python packages every store that runs on this Spark line gives its sinks."""
    return tuple(wheel for store in stores() if not store.unsupported(stack) for wheel in store.wheels(stack))


def stage_spark(stack: versions.Stack, context: Path, log: Path) -> None:
    """Spark's and every store's jars by Maven (`spark_pom`), pyspark's and the stores' wheels, into the context."""
    wheels = image_wheels(cache_dir())
    pom = context.parent / f"{context.name}-pom" / "pom.xml"
    pom.parent.mkdir(parents=True, exist_ok=True)
    pom.write_text(spark_pom(stack))
    with _fetching("Spark", stack.spark, versions.SPARK_VERSIONS):
        fetch_wheels([f"pyspark=={stack.spark}"], wheels, log)
        fetch_wheels(list(store_wheels(stack)), wheels, log, deps=False)
        fetch_maven_jars(pom, context / "jars", {"spark.version": stack.spark, "scala.binary": stack.scala}, log)
    stores = [wheel for name in store_wheels(stack) for wheel in wheels.glob(_wheel_glob(name))]
    for folder, found in (("wheels", [*wheels.glob(f"pyspark-{stack.spark}-*.whl"), *wheels.glob("py4j-*.whl")]),
                          ("store-wheels", stores)):
        (context / folder).mkdir()
        for wheel in found:
            shutil.copy2(wheel, context / folder)


FLINK_WHEELS = "flink"  # Flink's wheels' own cache folder (fetch.image_wheels): the base's install never sees them


def stage_flink(version: str, context: Path, log: Path) -> None:
    """PyFlink's wheels with their dependencies' (those published as source only built here: apache-flink-libraries,
    Flink's jars; crcmod, dill, docopt, hdfs, avro-python3) into the context's wheels/, the Kafka connector of
    its line's jars with their runtime dependencies by Maven into its jars/."""
    wheels = image_wheels(cache_dir(), FLINK_WHEELS)
    with _fetching("Flink", version, versions.FLINK_VERSIONS):
        chosen = fetch_wheels([f"apache-flink=={version}"], wheels, log)
        fetch_maven_jars(DOCKERFILES / "flink" / "pom.xml", context / "jars",
                         {"flink.kafka.connector": versions.flink_kafka_connector(version)}, log, versioned=True)
    (context / "wheels").mkdir()
    for wheel in chosen:
        shutil.copy2(wheel, context / "wheels")


def _wheel_glob(requirement: str) -> str:
    """A wheel file's name for `name==version`, as a glob (a wheel's name has `_` for `-`)."""
    name, _, version = requirement.partition("==")
    return f"{name.replace('-', '_')}-{version}-*.whl"


@contextmanager
def _fetching(name: str, version: str, known: tuple[str, ...]) -> Iterator[None]:
    """A release that cannot be fetched is one line naming it and the releases known to work."""
    try:
        yield
    except ImageBuildFailed as error:
        where = str(error).splitlines()[0]
        raise ImageBuildFailed(f"{name} {version} cannot be fetched here (known to work: {', '.join(known)}); "
                               f"{where}") from None


def stage_toxiproxy(context: Path, log: Path) -> None:
    """toxiproxy's server, built by Go from its module."""
    fetch_go_binary(
        versions.TOXIPROXY_MODULE, versions.TOXIPROXY, "cmd/server", context / "toxiproxy-server", log
    )
