"""Pins, labels, mirrors and image tags: the parts of set-up that are pure logic."""

import os
import re
import select
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from harness import versions
from harness.cluster import apt_sources, images, labels
from harness.cluster.image_inputs import store_jars
from harness.errors import BadInput

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_host_confluent_kafka_and_psycopg_pins_match_the_images() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"confluent-kafka=={versions.CONFLUENT_KAFKA}" in dependencies
    assert f"psycopg[binary]=={versions.PSYCOPG}" in dependencies
    assert f"psycopg[binary]=={versions.PSYCOPG}" in versions.image_python_requirements()


def test_image_tags_are_stable_hashes_and_children_follow_the_base() -> None:
    assert images.current().kafka.tag == images.current().kafka.tag
    assert re.fullmatch(r"eo-harness-kafka:[0-9a-f]{12}", images.current().kafka.tag)
    assert len({image.tag for image in images.current().all}) == len(images.current().all)


def test_each_version_asked_for_has_images_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    default = images.current()
    monkeypatch.setenv(versions.KAFKA_ENV, "3.9.1")
    monkeypatch.setenv(versions.SPARK_ENV, "3.5.x")
    older = images.current()
    assert (older.stack.kafka, older.stack.spark, older.stack.scala) == ("3.9.1", "3.5.7", "2.12")
    assert older.kafka.tag != default.kafka.tag and older.spark.tag != default.spark.tag
    assert older.base.tag == default.base.tag and older.toxiproxy.tag == default.toxiproxy.tag
    for bad in ("latest", "3.5.1.2", "9.9"):
        monkeypatch.setenv(versions.KAFKA_ENV, bad)
        with pytest.raises(BadInput, match="known to work: 4.1.1, 3.9.1"):
            versions.stack()


def test_spark_4_1_is_asked_for_by_its_line_and_has_a_spark_image_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    default = images.current()
    monkeypatch.setenv(versions.SPARK_ENV, "4.1")
    newer = images.current()
    assert (newer.stack.spark, newer.stack.scala, newer.stack.line) == ("4.1.1", "2.13", "4.1")
    assert newer.stack.connector == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"
    assert newer.spark.tag != default.spark.tag and newer.kafka.tag == default.kafka.tag
    assert {jar.split(":")[1] for jar in store_jars(newer.stack)} >= {
        "delta-spark_4.1_2.13", "iceberg-spark-runtime-4.1_2.13", "iceberg-aws-bundle", "hadoop-aws"}


def test_owner_of_this_process_is_alive_and_a_dead_one_is_not() -> None:
    assert labels.owner_alive(labels.owner_id())
    assert not labels.owner_alive(f"{labels.host_key()}/{os.getpid()}:0")
    assert not labels.owner_alive(f"{os.getpid()}:0")  # an older label, without its host: this host's
    assert not labels.owner_alive("")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_an_owner_in_another_pid_namespace_is_never_judged_dead_from_here() -> None:
    """Two CI jobs in separate PID namespaces share an engine: a pid means nothing across them, so a sweep
    leaves the other's runs alone, even once its owner has exited (its own reaper removes them)."""
    other = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c",
                            "from harness.cluster.labels import owner_id; print(owner_id())"],
                           capture_output=True, text=True, cwd=REPO, timeout=60, check=True).stdout.strip()
    host, _, process = other.rpartition("/")
    assert host != labels.host_key() and process.startswith("1:"), other  # pid 1 of its own namespace
    assert labels.owner_alive(other)
    assert labels.owner_alive(f"another-boot.{host.rpartition('.')[2]}/{os.getpid()}:0")  # another machine


def test_debian_mirror_comes_from_the_host_apt_sources() -> None:
    assert apt_sources.debian_mirror().startswith("http")


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


def test_one_image_build_at_a_time_on_a_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes that find an image missing share its build folder: the second waits for the first."""
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    waiter = "from harness.cluster import images\nwith images._building():\n    print('built', flush=True)\n"
    with images._building():
        second = subprocess.Popen([sys.executable, "-c", waiter], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env={**os.environ, "HARNESS_CACHE": str(tmp_path)})
        said = _line_with(second, "another process is building them; waiting for it", timeout_s=60)
        assert said and second.poll() is None, "the second build did not wait"  # held until the first ends
    out, _ = second.communicate(timeout=30)
    assert out == "built\n"


def _line_with(process: subprocess.Popen, text: str, timeout_s: float) -> str | None:
    """The first line of the process's stderr that holds `text`, waited for up to `timeout_s` (however long
    its start takes on a loaded machine); None if it never came."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([process.stderr], [], [], left)[0]:
            return None
        line = process.stderr.readline()  # type: ignore[union-attr]
        if not line:
            return None
        if text in line:
            return line
    return None
