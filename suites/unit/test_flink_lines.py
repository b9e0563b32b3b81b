"""Flink's lines (1.20, 2.2): the release a run asks for (`--flink`, HARNESS_FLINK), its line's Kafka connector,
its own image, and the release the certificate and explore's coverage name."""

from __future__ import annotations

import pytest

from harness import versions
from harness.certify.rows import MatrixRun
from harness.cli import parser
from harness.cluster import images
from harness.errors import BadInput
from harness.explore.explorer import subject_of
from harness.settings import FLINK, SETTINGS

pytestmark = pytest.mark.unit


def test_the_default_flink_is_1_20_with_its_connector() -> None:
    chosen = versions.stack()
    assert versions.FLINK_VERSIONS[0] == SETTINGS["flink"].default == chosen.flink == "1.20.3"
    assert chosen.flink_kafka_connector == "3.4.0-1.20"


@pytest.mark.parametrize("asked", ["2.2", "2.2.x", "2.2.1"])
def test_flink_2_2_is_asked_for_by_its_line_or_its_release(asked: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(versions.FLINK_ENV, asked)
    chosen = versions.stack()
    assert (chosen.flink, chosen.flink_kafka_connector) == ("2.2.1", "5.0.0-2.2")
    assert (chosen.kafka, chosen.spark) == (versions.KAFKA_VERSIONS[0], versions.SPARK_VERSIONS[0])


def test_another_patch_of_a_known_line_takes_that_line_s_connector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(versions.FLINK_ENV, "2.2.0")
    assert (versions.stack().flink, versions.stack().flink_kafka_connector) == ("2.2.0", "5.0.0-2.2")


@pytest.mark.parametrize(("asked", "said"), [
    ("1.19", "no known release of that line"), ("2.3.x", "no known release of that line"),
    ("1.19.3", "no Kafka connector pinned for Flink 1.19"), ("latest", "is not a version like 1.20.3")])
def test_an_unknown_flink_line_is_bad_input(asked: str, said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(versions.FLINK_ENV, asked)
    with pytest.raises(BadInput, match=f"{said}.*known to work: 1.20.3, 2.2.1"):
        versions.stack()


def test_each_flink_line_has_an_image_of_its_own_with_its_connector_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    lts, newer = images.flink_image("1.20.3"), images.flink_image("2.2.1")
    assert lts.pins == ("1.20.3", "3.4.0-1.20") and newer.pins == ("2.2.1", "5.0.0-2.2")
    assert lts.tag != newer.tag and lts.folder == newer.folder  # one Dockerfile, other inputs
    assert lts in images.current().every and newer not in images.current().every
    monkeypatch.setenv(versions.FLINK_ENV, "2.2")
    assert newer in images.current().every and lts not in images.current().every
    assert images.current().spark.tag == images.current(versions.Stack(versions.KAFKA_VERSIONS[0],
                                                                       versions.SPARK_VERSIONS[0])).spark.tag
    with pytest.raises(BadInput, match="no Kafka connector pinned for Flink 1.19"):
        images.flink_image("1.19.3")


def test_a_flink_certificate_names_the_release_run_and_its_connector_not_spark(
        monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = versions.KAFKA_VERSIONS[0]
    assert versions.stack().described("kafka", engine=FLINK) == {
        "kafka": kafka, "flink": "1.20.3", "flink_kafka_connector": "3.4.0-1.20"}
    monkeypatch.setenv(versions.FLINK_ENV, "2.2")
    assert versions.stack().described("kafka", engine=FLINK) == {
        "kafka": kafka, "flink": "2.2.1", "flink_kafka_connector": "5.0.0-2.2"}
    assert "flink" not in versions.stack().described("kafka") and "spark" in versions.stack().described("kafka")


def test_explore_keeps_each_flink_line_s_coverage_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    run = MatrixRun("kafka_exactly_once", engine=FLINK)
    lts = subject_of(run, versions.stack())
    monkeypatch.setenv(versions.FLINK_ENV, "2.2")
    assert "Flink 1.20.3" in lts and "Flink 2.2.1" in subject_of(run, versions.stack())


@pytest.mark.parametrize("command", [["certify", "--engine", "flink", "--quick"], ["space", "--engine", "flink"],
                                     ["explore", "--engine", "flink"], ["run", "--engine", "flink"],
                                     ["images", "build"]])
def test_every_command_that_runs_flink_takes_flink(command: list[str]) -> None:
    assert parser().parse_args([*command, "--flink", "2.2"]).flink == "2.2"
    assert parser().parse_args(["--flink", "2.2.x", *command]).flink == "2.2.x"
