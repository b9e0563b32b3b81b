"""The Spark image's class-data-sharing archive: the image writes it where every Spark JVM is told to map
it from, so that a renamed path cannot leave the JVMs loading every class again, silently."""

from __future__ import annotations

import pytest

from harness.cluster import spark
from harness.cluster.image_inputs import DOCKERFILES

pytestmark = pytest.mark.unit


def test_the_image_archives_where_the_jvms_map_from() -> None:
    dockerfile = (DOCKERFILES / "spark" / "Dockerfile").read_text()
    assert f"-XX:ArchiveClassesAtExit={spark.CLASS_ARCHIVE}" in dockerfile
    assert f"test -s {spark.CLASS_ARCHIVE}" in dockerfile
    assert f"-XX:SharedArchiveFile={spark.CLASS_ARCHIVE}" in spark.JVM_OPTIONS.split()
