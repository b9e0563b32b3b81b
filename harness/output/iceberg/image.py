"""Iceberg's REST catalog's image (the catalog's jars, fetched by Maven from its pom), for Iceberg tables on
object storage; its Dockerfile and pom beside this module."""

from __future__ import annotations

from pathlib import Path

from harness import versions
from harness.cluster.fetch import fetch_maven_jars
from harness.cluster.images import BASE, MAVEN, Image


def stage(context: Path, log: Path) -> None:
    """The catalog's jars, fetched by Maven from the context's own pom."""
    fetch_maven_jars(context / "pom.xml", context / "jars",
                     {"iceberg.version": versions.ICEBERG_REST, "jetty.version": versions.JETTY_FOR_ICEBERG_REST,
                      "postgres.jdbc": versions.POSTGRES_JDBC, "hadoop.version": versions.HADOOP_FOR_ICEBERG_REST}, log)


ICEBERG_REST = Image("iceberg-rest", (versions.ICEBERG_REST, versions.JETTY_FOR_ICEBERG_REST, versions.POSTGRES_JDBC,
                                      versions.HADOOP_FOR_ICEBERG_REST), stage, BASE, MAVEN,
                     Path(__file__).with_name("image"))
