"""Images from a registry: `images push REGISTRY` from the engine that built them, then on a new, empty
engine with the build tools hidden from PATH, `images build` pulls every image and builds none, and
`doctor` says this host can run but not build. The registry is Debian's, run here on loopback only with
a config of its own, started and stopped by the test; a registry path that holds nothing is refused in
one line naming the tools a build would take."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from harness.cli.doctor import registry_binary
from harness.cluster import engines, images
from harness.progress import say

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[1]
ENGINE = "registry-pull"  # a new engine: its data root is made for this test and removed after it
ENGINE_POOL = 8


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """Debian's registry on 127.0.0.1 (a port of its own, storage in tmp_path): `127.0.0.1:<port>/eo`."""
    binary = registry_binary()
    if binary is None:
        pytest.skip("no docker-registry binary: `python -m harness doctor --fix` unpacks Debian's "
                    "(or apt-get install docker-registry)")
    port = free_loopback_port()
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: "
                      f"{tmp_path / 'registry'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    with (tmp_path / "registry.log").open("wb") as log:
        server = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    said = (tmp_path / "registry.log").read_text()
                    raise AssertionError(f"the registry did not answer: {said}") from None
                time.sleep(0.2)
        yield f"127.0.0.1:{port}/eo"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def empty_engine() -> Iterator[str]:
    """A Docker engine of this machine's that holds no image: its DOCKER_HOST."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.skip("a second engine needs root and dockerd")
    shutil.rmtree(engines.DATA / ENGINE, ignore_errors=True)  # left by a run that was killed
    url = engines.start(ENGINE, pool=ENGINE_POOL)
    try:
        yield url
    finally:
        engines.stop(ENGINE)
        shutil.rmtree(engines.DATA / ENGINE)
        shutil.rmtree(engines.RUN / ENGINE, ignore_errors=True)
        (engines.DATA / f"{ENGINE}.log").unlink(missing_ok=True)


def harness(*args: str, engine: str, registry: str, cache: Path, path: Path) -> subprocess.CompletedProcess:
    """`python -m harness ARGS` of this checkout on `engine`, with only `path` on PATH."""
    env = {**os.environ, "DOCKER_HOST": engine, "HARNESS_REGISTRY": registry, "HARNESS_CACHE": str(cache),
           "PATH": str(path)}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)


def test_a_host_without_build_tools_pulls_every_image_and_builds_none(registry: str, empty_engine: str,
                                                                     tmp_path: Path) -> None:
    images.build_all()
    started = time.monotonic()
    push = subprocess.run([sys.executable, "-m", "harness", "images", "push", registry], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert push.returncode == 0, push.stdout + push.stderr
    say(f"pushed the images to {registry} in {time.monotonic() - started:.0f} s")
    wanted = images.current().all
    for image in wanted:
        assert f"image {image.tag}: pushed to {registry} in " in push.stderr + push.stdout

    no_tools, cache = tmp_path / "bin", tmp_path / "cache"  # no debootstrap, mvn, java, go or apt-get; no docker CLI
    no_tools.mkdir()
    empty = harness("images", "build", engine=empty_engine, registry=f"{registry}-empty", cache=cache, path=no_tools)
    assert empty.returncode == 3, empty.stdout + empty.stderr
    assert (f"harness: error: image {wanted[0].tag} cannot be had here: not in {registry}-empty, and building it "
            "takes debootstrap (not on PATH)") in empty.stderr

    started = time.monotonic()
    pulled = harness("images", "build", engine=empty_engine, registry=registry, cache=cache, path=no_tools)
    out = pulled.stdout + pulled.stderr
    assert pulled.returncode == 0, out
    say(f"pulled the images into an empty engine in {time.monotonic() - started:.0f} s")
    for image in wanted:
        assert f"image {image.tag}: pulled from {registry} in " in out
    assert "build" not in out.replace("images build", "").lower(), out  # nothing built, nothing said of a build
    assert not (cache / "logs").exists() and not (cache / "build").exists()
    client = docker.DockerClient(base_url=empty_engine)
    assert sorted(tag for i in client.images.list() for tag in i.tags) == sorted(i.tag for i in wanted)

    doctor = harness("doctor", engine=empty_engine, registry=registry, cache=cache, path=no_tools)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    build_line = next(line for line in doctor.stdout.splitlines() if line.startswith("can build images"))
    missing = set(build_line.split("no: missing ", 1)[1].split(", "))  # the postgres image takes apt-get
    assert missing == {"debootstrap", "mvn", "java", "go", "apt-get"}, doctor.stdout
    assert f"can run scenarios          yes: images {len(wanted)} present\n" in doctor.stdout
