"""A run has only the images it starts: every cluster's four, then the servers its output's store starts
(harness.output.registry), so a Kafka run neither builds nor pulls PostgreSQL's image, the S3 server's or
the REST catalog's. `images build` with no output still has every image it had, and Flink's, which no Spark
run starts."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from harness import versions
from harness.cluster import images
from harness.cluster.image_inputs import PACKAGE
from harness.output.registry import NAMES, store
from harness.run import session as sessions
from suites.unit.test_registry_images import Host

pytestmark = pytest.mark.unit
CLUSTER = ("base", "kafka", "spark", "toxiproxy")
SERVERS = {("postgres", "volume"): ("postgres",), ("delta", "s3"): ("versitygw",),
           ("iceberg", "s3"): ("versitygw", "postgres", "iceberg-rest")}  # every other place: none


def places() -> list[tuple[str, str]]:
    """Every output in the registry, on every store it may live on."""
    return [(name, where) for name in NAMES for where in store(name).stores]


def test_the_places_of_the_registry_are_all_known_here() -> None:
    assert set(SERVERS) <= set(places()) and ("kafka", "volume") in places()


@pytest.mark.parametrize("output, where", places())
def test_a_run_has_the_cluster_s_images_then_its_store_s_servers_only(output: str, where: str) -> None:
    wanted = [image.name for image in images.for_output(output, where)]
    assert wanted == [*CLUSTER, *SERVERS.get((output, where), ())]


@pytest.mark.parametrize("output, where", places())
def test_parents_come_before_their_children(output: str, where: str) -> None:
    wanted = images.for_output(output, where)
    assert all(image.parent is None or wanted.index(image.parent) < n for n, image in enumerate(wanted))


def test_every_image_a_store_starts_is_one_images_build_builds_with_its_inputs_in_the_store_s_package() -> None:
    started = {image for output, where in places() for image in store(output).images(where)}
    assert started <= set(images.current().every)
    for image in started:
        assert (image.folder / "Dockerfile").is_file()
        assert image.folder.is_relative_to(PACKAGE / "output")  # the store's own


def test_an_image_s_tag_hashes_its_inputs_by_their_place_in_its_folder_not_the_package_s(tmp_path: Path) -> None:
    """A store from another package brings its images' inputs from wherever it is installed: the same tag."""
    [postgres] = store("postgres").images("volume")
    copy = tmp_path / "elsewhere" / "image"
    shutil.copytree(postgres.folder, copy)
    assert replace(postgres, inputs=copy).tag == postgres.tag
    (copy / "Dockerfile").write_text((copy / "Dockerfile").read_text() + "\n# changed\n")
    assert replace(postgres, inputs=copy).tag != postgres.tag


def test_a_kafka_run_pulls_and_builds_no_table_server_s_image(monkeypatch: pytest.MonkeyPatch) -> None:
    host = Host(monkeypatch, set(), {image.tag for image in images.current().all}, set())
    images.build_for("kafka", "volume")
    assert sorted(host.pulled) == sorted(image.tag for image in images.current().cluster)
    assert not {image.tag for image in store("postgres").images("volume")} & set(host.pulled)


def test_a_postgres_run_builds_its_server_s_image_with_the_cluster_s(monkeypatch: pytest.MonkeyPatch) -> None:
    host = Host(monkeypatch, set(), set(), {"debootstrap", "mvn", "java", "go", "apt-get"})
    images.build_for("postgres", "volume")
    assert host.built == [*CLUSTER, "postgres"]


def test_images_build_without_an_output_still_has_every_image(monkeypatch: pytest.MonkeyPatch) -> None:
    host = Host(monkeypatch, set(), set(), {"debootstrap", "mvn", "java", "go", "apt-get"})
    images.build_all()
    assert host.built == [*CLUSTER, "versitygw", "postgres", "iceberg-rest", "flink"]


def test_flink_s_image_is_one_images_build_builds_and_no_spark_run_starts() -> None:
    flink = images.flink_image(versions.stack().flink)
    assert flink in images.current().every  # CI builds it up front
    assert flink not in images.current().cluster and flink not in images.current().all
    assert all(flink not in images.for_output(output, where) for output, where in places())
    assert flink.name == "flink" and flink.parent == images.BASE and flink.tools == images.MAVEN
    assert re.fullmatch(r"eo-harness-flink:[0-9a-f]{12}", flink.tag)
    assert (flink.folder / "Dockerfile").is_file() and flink.folder == PACKAGE / "images" / "flink"


def test_a_cluster_starts_without_a_table_server_s_image(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_created", lambda image: None if image.name == "postgres" else 1.0)
    assert images.missing() == []


@pytest.mark.parametrize("given, environment, expected", [
    ({}, {}, ("kafka", "volume")),
    ({}, {"HARNESS_OUTPUT": "postgres"}, ("postgres", "volume")),
    ({"output": "iceberg", "store": "s3"}, {}, ("iceberg", "s3")),
])
def test_a_session_has_the_images_of_the_output_it_is_told_else_the_settings(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, given: dict, environment: dict,
        expected: tuple[str, str]) -> None:
    asked: list[tuple[str, str]] = []

    class Started:
        run_id = "20261201-1"

        def __init__(self, **_: object) -> None: ...
        def __enter__(self) -> Started: return self
        def __exit__(self, *exc: object) -> None: ...
        def save_logs(self, folder: Path) -> None: ...

    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path))
    monkeypatch.setattr(sessions.images, "build_for", lambda output, where, stack: asked.append((output, where)))
    monkeypatch.setattr(sessions, "Cluster", Started)
    monkeypatch.setattr(sessions, "write_index", lambda folder: None)
    with sessions.session(**given):
        pass
    assert asked == [expected]
