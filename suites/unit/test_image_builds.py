"""Images built at once, without Docker: every image fetches its inputs while the others do, a child's
`docker build` waits for its parent's build, and a parent that fails is the one error said (its children
are not built); a fetch beside its parent's build runs at a lower priority than that build."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cluster import images
from harness.errors import ImageBuildFailed

pytestmark = pytest.mark.unit


class Builds:
    """When each step began and ended (monotonic seconds), by name."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, base_fails: bool = False) -> None:
        self.times: dict[str, tuple[float, float]] = {}
        self.lock = threading.Lock()
        monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
        monkeypatch.setattr(images.rootfs, "build_base", self.base if not base_fails else self.failing_base)
        monkeypatch.setattr(images, "_docker_build", lambda image, context, log: self.timed(f"docker {image.name}"))

    def timed(self, name: str, seconds: float = 0.0) -> None:
        began = time.monotonic()
        time.sleep(seconds)
        with self.lock:
            self.times[name] = (began, time.monotonic())

    def base(self, tag: str, work: Path, wheels: Path, debs: Path, log: Path) -> None:
        self.timed("base", 0.6)

    def failing_base(self, tag: str, work: Path, wheels: Path, debs: Path, log: Path) -> None:
        raise ImageBuildFailed("step 'debootstrap' failed with exit status 1")

    def children(self) -> list[images.Image]:
        wanted = images.current()
        return [replace(image, stage=lambda context, log, name=image.name: self.timed(f"fetch {name}", 0.3))
                for image in (wanted.kafka, wanted.spark, wanted.toxiproxy)]


def test_inputs_are_fetched_at_once_and_a_child_is_built_after_its_parent(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    builds = Builds(monkeypatch, tmp_path)
    started = time.monotonic()
    images._build_at_once([images.BASE, *builds.children()])
    assert time.monotonic() - started < 0.6 + 0.3 + 0.5  # not 0.6 + 3 * 0.3 one after another
    base_done = builds.times["base"][1]
    for name in ("kafka", "spark", "toxiproxy"):
        assert builds.times[f"fetch {name}"][0] < base_done  # fetched while the base was being built
        assert builds.times[f"docker {name}"][0] >= base_done  # built on it once it was there


def test_a_parent_that_fails_is_the_error_and_its_children_are_not_built(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    builds = Builds(monkeypatch, tmp_path, base_fails=True)
    with pytest.raises(ImageBuildFailed, match="^step 'debootstrap' failed"):
        images._build_at_once([images.BASE, *builds.children()])
    assert not [name for name in builds.times if name.startswith("docker")]


def test_a_child_whose_parent_is_present_is_built_at_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    builds = Builds(monkeypatch, tmp_path)
    images._build_at_once(builds.children())
    assert "base" not in builds.times and {f"docker {n}" for n in ("kafka", "spark", "toxiproxy")} <= set(builds.times)


def test_a_fetch_beside_its_parents_build_runs_below_it() -> None:
    """Processes a fetching thread starts run at its lower priority; the process itself keeps its own."""
    niceness: list[int] = []

    def fetch() -> None:
        images.yield_cpu()
        niceness.append(int(subprocess.run([sys.executable, "-c", "import os; print(os.nice(0))"],
                                           capture_output=True, text=True, check=True).stdout))

    before = os.nice(0)
    thread = threading.Thread(target=fetch)
    thread.start()
    thread.join()
    assert niceness == [before + images.FETCH_NICENESS] and os.nice(0) == before
