"""Pins, labels, mirrors and image tags: the parts of set-up that are pure logic."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from harness import versions
from harness.cluster import fetch, images, labels

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_host_confluent_kafka_pin_matches_the_images() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"confluent-kafka=={versions.CONFLUENT_KAFKA}" in dependencies


def test_image_tags_are_stable_hashes_and_children_follow_the_base() -> None:
    assert images.KAFKA.tag == images.KAFKA.tag
    assert re.fullmatch(r"eo-harness-kafka:[0-9a-f]{12}", images.KAFKA.tag)
    assert len({image.tag for image in images.ALL}) == len(images.ALL)


def test_owner_of_this_process_is_alive_and_a_dead_one_is_not() -> None:
    assert labels.owner_alive(labels.owner_id())
    assert not labels.owner_alive(f"{os.getpid()}:0")
    assert not labels.owner_alive("")


def test_debian_mirror_comes_from_the_host_apt_sources() -> None:
    assert fetch.debian_mirror().startswith("http")


def test_unknown_pipeline_is_bad_input_before_anything_starts() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "harness", "smoke", "--pipeline", "harness.catalog.pipelines.nope"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )
    assert run.returncode == 2
    assert "pipeline 'harness.catalog.pipelines.nope' cannot be imported" in run.stderr


def test_kraft_cluster_ids_never_start_with_a_dash() -> None:
    from harness.cluster.kafka import cluster_id

    ids = [cluster_id() for _ in range(2_000)]  # about 31 would start with '-' without the check
    assert len(set(ids)) == 2_000 and all(len(i) == 22 and not i.startswith("-") for i in ids)
