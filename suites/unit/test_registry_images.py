"""Images from a registry, without Docker: the registry's name as Docker writes it, where a local tag
lives in it, pull before build (a build only for what the registry lacks, and only where the tools are),
and doctor's two answers: can this host build, can it run."""

from __future__ import annotations

import contextlib
import threading

import pytest

from harness.cluster import images
from harness.cluster.readiness import Readiness
from harness.cluster.registry import checked_registry, remote
from harness.errors import BadInput, ImageBuildFailed

pytestmark = pytest.mark.unit
REGISTRY = "127.0.0.1:5000/eo"


@pytest.mark.parametrize("text, registry", [("127.0.0.1:5000/eo", REGISTRY), ("127.0.0.1:5000/eo/", REGISTRY),
                                            ("127.0.0.1:443", "127.0.0.1:443"),
                                            ("localhost/a/b-c", "localhost/a/b-c")])
def test_a_registry_is_written_as_docker_writes_one(text: str, registry: str) -> None:
    assert checked_registry(text) == registry


@pytest.mark.parametrize("text", ["http://127.0.0.1:5000", "127.0.0.1:5000/eo:tag", "127.0.0.1:5000/EO", "", "a b"])
def test_a_registry_with_a_scheme_a_tag_or_capitals_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput, match="write host\\[:port\\]\\[/path\\]"):
        checked_registry(text)


def test_a_local_tag_keeps_its_name_and_hash_in_the_registry() -> None:
    assert remote(REGISTRY, "eo-harness-kafka:0123456789ab") == (f"{REGISTRY}/eo-harness-kafka", "0123456789ab")


class Host:
    """The engine's images, the registry's and the tools on PATH, as `images` sees them."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, local: set[str], registry: set[str], tools: set[str]) -> None:
        self.local, self.registry, self.built, self.pulled = local, registry, [], []
        monkeypatch.setattr(images, "present", lambda image: image.tag in self.local)
        monkeypatch.setattr(images, "_created", lambda image: None)  # what is not present is missing, not old
        monkeypatch.setattr(images.registries, "pull", self.pull)
        monkeypatch.setattr(images, "_build_at_once", lambda todo: self.built.extend(i.name for i in todo))
        monkeypatch.setattr(images.shutil, "which", lambda tool: f"/usr/bin/{tool}" if tool in tools else None)
        monkeypatch.setattr(images, "_building", contextlib.nullcontext)
        monkeypatch.setattr(images, "from_environment", lambda name: REGISTRY if registry else "")

    def pull(self, registry: str, tag: str) -> str | None:
        if tag not in self.registry:
            return f"not in {registry}"
        self.pulled.append(tag)
        self.local.add(tag)
        return None


def test_what_the_registry_has_is_pulled_and_only_the_rest_built(monkeypatch: pytest.MonkeyPatch) -> None:
    wanted = images.current()
    host = Host(monkeypatch, set(), {wanted.base.tag, wanted.spark.tag},
                {"debootstrap", "mvn", "java", "go", "apt-get"})
    images.build_all()
    assert sorted(host.pulled) == sorted([wanted.base.tag, wanted.spark.tag])
    assert host.built == ["kafka", "toxiproxy", "versitygw", "postgres", "iceberg-rest", "flink"]


def test_the_images_are_pulled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    wanted = images.current()
    host = Host(monkeypatch, set(), {image.tag for image in wanted.every}, set())
    every_pull = threading.Barrier(len(wanted.every), timeout=10)  # broken unless every pull is under way at once

    def pull(registry: str, tag: str) -> str | None:
        every_pull.wait()
        return Host.pull(host, registry, tag)

    monkeypatch.setattr(images.registries, "pull", pull)
    images.build_all()
    assert sorted(host.pulled) == sorted(image.tag for image in wanted.every) and host.built == []


def test_without_a_registry_everything_missing_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    wanted = images.current()
    host = Host(monkeypatch, {wanted.base.tag}, set(), {"mvn", "java", "go", "apt-get"})  # no debootstrap: base is
    images.build_all()  # present
    assert host.built == ["kafka", "spark", "toxiproxy", "versitygw", "postgres", "iceberg-rest", "flink"] \
        and host.pulled == []


def test_a_host_that_can_neither_pull_nor_build_is_told_what_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    wanted = images.current()
    Host(monkeypatch, set(), set(), {"java"})
    with pytest.raises(ImageBuildFailed, match=f"^image {wanted.kafka.tag} cannot be had here: not in {REGISTRY}, "
                                               "and building it takes mvn, debootstrap \\(not on PATH\\); push the "
                                               "images from a host that builds them"):
        images._check_buildable(wanted.kafka, f"not in {REGISTRY}")  # its base is not present: its tools count too
    with pytest.raises(ImageBuildFailed, match="cannot be had here: no registry given \\(the `registry` setting\\)"):
        images._pull_at_once([wanted.toxiproxy], "")


def test_doctor_says_what_this_host_can_do_and_exactly_what_it_lacks() -> None:
    runs_only = Readiness(None, ["debootstrap", "go"], {"a:1": "present", "b:1": f"in {REGISTRY}", "c:1": "present"})
    assert (runs_only.can_build, runs_only.can_run) == (False, True)
    assert runs_only.build_line() == "no: missing debootstrap, go"
    assert runs_only.run_line() == f"yes: images 2 present, 1 in {REGISTRY}"
    neither = Readiness(None, ["go"], {"a:1": "present"}, {"t:1": f"not in {REGISTRY}; building it takes go"})
    assert not neither.can_run and neither.run_line() == f"no: missing image t:1 (not in {REGISTRY}; building it " \
                                                         "takes go)"
    no_engine = Readiness("no Docker engine answers at unix:///x.sock", [])
    assert (no_engine.can_build, no_engine.can_run) == (False, False)
    assert no_engine.build_line() == "no: missing a Docker engine"
    assert no_engine.run_line() == "no: missing a Docker engine (no Docker engine answers at unix:///x.sock)"


def test_push_sends_the_s3_stores_images_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that only pulls cannot build the S3 server's or the catalog's image when a run first needs it."""
    wanted = images.current()
    every = {image.tag for image in wanted.every}
    assert {"versitygw", "iceberg-rest", "postgres"} <= {image.name for image in wanted.every}
    Host(monkeypatch, set(every), set(), set())
    pushed: list[str] = []
    monkeypatch.setattr(images.registries, "push", lambda registry, tag: pushed.append(tag) or 0.0)
    images.push_all(REGISTRY)
    assert sorted(pushed) == sorted(every)
