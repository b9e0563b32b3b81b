"""Every pinned version of the system under test, in one place: changing one rebuilds the images.

Kafka, Spark and Flink are the user's choice (`--kafka`, `--spark`, `--flink`; env HARNESS_KAFKA, HARNESS_SPARK,
HARNESS_FLINK; ini harness_kafka, harness_spark, harness_flink): each combination gets images of its own, tagged
by the hash of their inputs. Any release can be asked for (a Flink release of a line whose Kafka connector is
pinned below); the ones below are known to work here (docs/requirements.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from harness.errors import BadInput

DEBIAN_SUITE = "bookworm"
# the images' interpreter and C library: Debian 12's python3 and glibc. Their wheels are fetched for these,
# whatever Python the host runs (harness.cluster.fetch)
IMAGE_PYTHON = (3, 11)
IMAGE_GLIBC = (2, 36)
DEBIAN_PACKAGES = (
    "openjdk-17-jre-headless",
    "python3",
    "python3-venv",
    "procps",
    "iproute2",
    "ca-certificates",
)

CONFLUENT_KAFKA = "2.16.1"
PSYCOPG = "3.3.9"  # PostgreSQL's client, for the harness's reads and the sinks' writes (harness.output.postgres)
PSYCOPG2 = "2.9.13"  # the older client most sinks written for PostgreSQL import (psycopg2-binary)
POSTGRES_PACKAGE = "postgresql-15"  # Debian 12's PostgreSQL server package: the postgres image (a table output)
POSTGRES_JDBC = "42.7.8"  # org.postgresql:postgresql, in the Spark image for `df.write.jdbc`
LOG4J = "2.24.3"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY = "v2.12.0"
GO_FOR_TOXIPROXY = (1, 23)  # its go.mod's `go` line: older Go cannot build it (Debian 12's golang-go is 1.19)
VERSITYGW_MODULE = "github.com/versity/versitygw"  # an S3 server: tables on object storage (--store s3)
VERSITYGW = "v1.8.0"  # its `If-None-Match: *` PUT is atomic (versity/versitygw#2288)
GO_FOR_VERSITYGW = (1, 25)
# Iceberg's REST catalog server (an Iceberg table's catalog, --store s3), and what it runs on
ICEBERG_REST = "1.11.0"
JETTY_FOR_ICEBERG_REST = "12.1.8"
HADOOP_FOR_ICEBERG_REST = "3.4.3"

# Known to work, the default first. Kafka 4.x runs transaction protocol v2 (KIP-890's server-side
# defence), 3.x v1. Spark's Kafka connector must match pyspark exactly: each Spark pin is its line's newest
# patch whose connector and token-provider jars both resolve from Maven Central here (those of 4.0.1 to
# 4.0.5, 4.1.2 to 4.1.4 and 3.5.8 to 3.5.9 lack one or both).
KAFKA_VERSIONS = ("4.1.1", "3.9.1")
SPARK_VERSIONS = ("4.0.0", "4.1.1", "3.5.7")
# Delta Lake's release for each Spark line: its jars go into the Spark image for table outputs. From 4.1 on a
# Delta release has a jar per Spark line (harness.output.delta.artifact) and needs pyspark 4.0.1 or newer on
# Spark 4.0; its Spark 4.1 jar before 4.4.0 calls Spark 4.1.0's internals, which 4.1.2 and later lack.
DELTA_VERSIONS = {"4.0": "4.0.1", "4.1": "4.4.0", "3.5": "3.3.2"}
# Apache Iceberg's Spark runtime for each Spark line, the default first: a run picks one with --iceberg.
# 1.10.1 stays: suites/test_upstream.py reproduces bugs that 1.10.2 fixes; so do 1.9.1 and 1.9.2 on Spark 3.5
# (apache/iceberg#13352, fixed in 1.9.2; Iceberg's Spark 4.0 runtime starts at 1.10.0).
ICEBERG_VERSIONS = {"4.0": ("1.11.0", "1.10.1"), "4.1": ("1.12.0", "1.11.0"), "3.5": ("1.10.1", "1.9.2", "1.9.1")}
# Apache Flink (the eo-harness-flink image, `--engine flink`) from PyPI's apache-flink and apache-flink-libraries,
# the default first: 1.20 is the 1.x long-term support line (notes/flink-feasibility.md), 2.2 the 2.x line.
FLINK_VERSIONS = ("1.20.3", "2.2.1")
# Flink's Kafka connector for each Flink line (thin jars: Maven Central has no fat one). 3.4.0-1.20 takes
# kafka-clients 3.4.0; 5.0.0-2.2 kafka-clients 4.x.
FLINK_KAFKA_CONNECTORS = {"1.20": "3.4.0-1.20", "2.2": "5.0.0-2.2"}
KAFKA_ENV = "HARNESS_KAFKA"
SPARK_ENV = "HARNESS_SPARK"
ICEBERG_ENV = "HARNESS_ICEBERG"
FLINK_ENV = "HARNESS_FLINK"


@dataclass(frozen=True)
class Stack:
    """The Kafka, Spark and Flink versions of a run (a table format's follow Spark's line; Flink's serves a
    run with --engine flink)."""

    kafka: str
    spark: str
    iceberg_asked: str = ""  # an Iceberg release of the Spark line's (ICEBERG_VERSIONS); empty: its default
    flink: str = FLINK_VERSIONS[0]

    @property
    def flink_kafka_connector(self) -> str:
        """The Kafka connector of this Flink release's line (FLINK_KAFKA_CONNECTORS)."""
        return flink_kafka_connector(self.flink)

    @property
    def scala(self) -> str:
        """Spark's Scala binary version (pyspark 3.x ships 2.12 jars, 4.x 2.13)."""
        return "2.12" if self.spark.startswith("3.") else "2.13"

    @property
    def iceberg(self) -> str | None:
        """The Iceberg release its Spark image carries (None: none for its line)."""
        return self.iceberg_asked or next(iter(ICEBERG_VERSIONS.get(self.line, ())), None)

    @property
    def connector(self) -> str:
        return f"org.apache.spark:spark-sql-kafka-0-10_{self.scala}:{self.spark}"

    @property
    def line(self) -> str:
        """Spark's line (4.1, 4.0, 3.5): a table format's release is built against one."""
        return ".".join(self.spark.split(".")[:2])

    def described(self, output: str, table_store: str = "volume", engine: str = "spark") -> dict[str, str]:
        """The versions a result and a certificate name: Kafka's, the engine's (Spark's, or Flink's and its Kafka
        connector's), and the output's store's (harness.output.registry): its parts that run on this Spark line,
        the servers it starts for a table on `table_store`. Nothing the run did not use."""
        from harness.output.registry import store

        if engine == "flink":  # a Flink job writes into Kafka through Flink's own connector
            return {"kafka": self.kafka, "flink": self.flink, "flink_kafka_connector": self.flink_kafka_connector}
        found = store(output)
        named = found.versions(self) | found.servers(self, table_store)
        parts = {key: version for key, (_, version) in named.items()}
        return {"kafka": self.kafka, "spark": self.spark, **parts}


def stack(spark: str | None = None, iceberg: str | None = None) -> Stack:
    """The versions asked for (through the environment), else the defaults; BadInput for a non-version, or a
    Flink release of a line with no Kafka connector pinned. `spark`, `iceberg`: these releases in place of the
    ones asked for (a test's `spark` or `iceberg` marker)."""
    flink = _pick("Flink", os.environ.get(FLINK_ENV, ""), FLINK_VERSIONS)
    flink_kafka_connector(flink)
    chosen = Stack(_pick("Kafka", os.environ.get(KAFKA_ENV, ""), KAFKA_VERSIONS),
                   _pick("Spark", spark or os.environ.get(SPARK_ENV, ""), SPARK_VERSIONS), flink=flink)
    asked = iceberg or os.environ.get(ICEBERG_ENV, "")
    if asked:
        known = ICEBERG_VERSIONS.get(chosen.line, ())
        if not known:
            raise BadInput(f"Iceberg {asked}: no Iceberg release known for Spark {chosen.spark}")
        picked = _pick("Iceberg", asked, known)
        if picked not in known:  # its jars and their AWS SDK are pinned per release: an unknown one has none
            raise BadInput(f"Iceberg {picked}: not a release known for Spark {chosen.line} (known to work: "
                           f"{', '.join(known)})")
        return replace(chosen, iceberg_asked=picked)
    return chosen


def flink_line(release: str) -> str:
    """A Flink release's line: 2.2 for 2.2.1."""
    return ".".join(release.split(".")[:2])


def flink_kafka_connector(release: str) -> str:
    """The Kafka connector pinned for this Flink release's line; BadInput for a line with none."""
    connector = FLINK_KAFKA_CONNECTORS.get(flink_line(release))
    if connector is None:
        raise BadInput(f"Flink {release}: no Kafka connector pinned for Flink {flink_line(release)} (known to "
                       f"work: {', '.join(FLINK_VERSIONS)})")
    return connector


def _pick(name: str, asked: str, known: tuple[str, ...]) -> str:
    """`4.1.1` as it is; `3.5` or `3.5.x`: the known release of that line; empty: the default."""
    if not asked:
        return known[0]
    line = re.fullmatch(r"(\d+\.\d+)(\.x)?", asked)
    if line:
        for version in known:
            if version.startswith(line[1] + "."):
                return version
        raise BadInput(f"{name} {asked}: no known release of that line; known to work: {', '.join(known)}")
    if not re.fullmatch(r"\d+\.\d+\.\d+", asked):
        raise BadInput(f"{name} version '{asked}' is not a version like {known[0]}; known to work: {', '.join(known)}")
    return asked


def image_python_requirements() -> list[str]:
    """The Python packages installed into every image's virtual environment (pyspark only into Spark's)."""
    return [f"confluent-kafka=={CONFLUENT_KAFKA}", f"psycopg[binary]=={PSYCOPG}", f"psycopg2-binary=={PSYCOPG2}"]
