"""The images' wheels are their interpreter's (Debian 12's CPython 3.11), whatever Python the host runs:
pip is told the images' version, ABI and platform, dependencies' markers are judged for the images, and
a wheel only the host could install is refused."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from harness import versions
from harness.cluster import fetch
from harness.errors import ImageBuildFailed

pytestmark = pytest.mark.unit

IMAGES = "cp{}{}".format(*versions.IMAGE_PYTHON)


def wheel(folder: Path, name: str, version: str, tag: str, requires: tuple[str, ...] = ()) -> Path:
    """A wheel file of `name` with the given tag and Requires-Dist lines."""
    path = folder / f"{name}-{version}-{tag}.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {line}\n" for line in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}-{version}.dist-info/METADATA", metadata)
    return path


class FakeIndex:
    """pip's download against an index of made-up packages: records each command, writes the wheel."""

    def __init__(self, folder: Path) -> None:
        self.commands: list[list[str]] = []
        self.packages = {
            "client": ("1.0", f"{IMAGES}-{IMAGES}-manylinux_2_28_x86_64",
                       ('typing-extensions>=4; python_version < "3.13"', 'pywin; sys_platform == "win32"',
                        'speedups; extra == "fast"')),
            "typing_extensions": ("4.16.0", "py3-none-any", ()),
            "speedups": ("2.0", f"{IMAGES}-{IMAGES}-manylinux2014_x86_64", ()),
        }
        self.folder = folder

    def __call__(self, command: list[str], log: Path, step: str, **_: object) -> None:
        self.commands.append(command)
        name = re.split(r"[\[<>=;]", command[-1])[0].replace("-", "_")
        version, tag, requires = self.packages[name]
        wheel(Path(command[command.index("--dest") + 1]), name, version, tag, requires)


def test_wheels_and_their_dependencies_are_chosen_for_the_images_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = FakeIndex(tmp_path)
    monkeypatch.setattr(fetch, "run_logged", index)
    monkeypatch.setattr(fetch.platform, "machine", lambda: "x86_64")
    dest = tmp_path / "wheels"
    fetch.fetch_wheels(["client[fast]==1.0"], dest, tmp_path / "log")

    for command in index.commands:  # pip told the images' interpreter and platform, never left to the host's
        assert command[command.index("--python-version") + 1] == "{}.{}".format(*versions.IMAGE_PYTHON)
        assert command[command.index("--abi") + 1] == IMAGES and "--only-binary=:all:" in command
        assert f"manylinux_2_{versions.IMAGE_GLIBC[1]}_x86_64" in command
    # the marker `python_version < "3.13"` is judged for the images (a 3.13 host would drop it); win32 is not
    assert sorted(p.name.split("-")[0] for p in dest.glob("*.whl")) == ["client", "speedups", "typing_extensions"]


def test_a_wheel_for_the_hosts_interpreter_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch.platform, "machine", lambda: "x86_64")
    wheel(tmp_path, "client", "1.0", f"{IMAGES}-{IMAGES}-manylinux_2_28_x86_64")
    wheel(tmp_path, "pure", "1.0", "py2.py3-none-any")
    fetch.check_image_wheels(tmp_path)  # both install in the images
    for foreign in ("cp313-cp313-manylinux_2_28_x86_64", f"{IMAGES}-{IMAGES}-manylinux_2_39_x86_64",
                    f"{IMAGES}-{IMAGES}-manylinux_2_28_aarch64", f"{IMAGES}-{IMAGES}-macosx_11_0_arm64"):
        bad = wheel(tmp_path, "native", "1.0", foreign)
        with pytest.raises(ImageBuildFailed, match="do not install on the images' Python"):
            fetch.check_image_wheels(tmp_path)
        bad.unlink()


def test_a_source_only_package_must_build_pure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pyspark is published as source only: built on the host, its wheel must install anywhere."""
    monkeypatch.setattr(fetch.platform, "machine", lambda: "x86_64")
    built_tag = {"tag": "py2.py3-none-any"}

    def pip(command: list[str], log: Path, step: str, **_: object) -> None:
        if command[3] == "download":
            raise ImageBuildFailed("no wheel")
        wheel(Path(command[command.index("--wheel-dir") + 1]), "engine", "4.0.0", built_tag["tag"])

    monkeypatch.setattr(fetch, "run_logged", pip)
    fetch.fetch_wheels(["engine==4.0.0"], tmp_path / "a", tmp_path / "log", deps=False)
    assert [p.name for p in (tmp_path / "a").glob("*.whl")] == ["engine-4.0.0-py2.py3-none-any.whl"]
    built_tag["tag"] = "cp313-cp313-linux_x86_64"
    with pytest.raises(ImageBuildFailed, match="builds only for the host's"):
        fetch.fetch_wheels(["engine==4.0.0"], tmp_path / "b", tmp_path / "log", deps=False)


class VersionedIndex:
    """pip's download against made-up packages of several versions each (version: Requires-Dist lines): the
    newest the requirement allows, as a pure wheel; none, and no source to build either, when none does."""

    def __init__(self, packages: dict[str, dict[str, tuple[str, ...]]]) -> None:
        self.packages = packages
        self.downloads: list[str] = []

    def __call__(self, command: list[str], log: Path, step: str, **_: object) -> None:
        requirement = Requirement(command[-1])
        allowed = [v for v in self.packages[requirement.name] if requirement.specifier.contains(v)]
        if command[3] != "download" or not allowed:
            raise ImageBuildFailed(f"no version of {requirement}")
        newest = max(allowed, key=Version)
        self.downloads.append(f"{requirement.name}-{newest}")
        wheel(Path(command[command.index("--dest") + 1]), requirement.name, newest, "py3-none-any",
              self.packages[requirement.name][newest])


def test_a_package_two_others_require_in_different_ranges_is_chosen_within_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As apache-flink 1.20 asks numpy>=1.22.4 and its apache-beam numpy<1.25: the newest numpy meets the first
    only; then pandas 3 wants numpy 2, so an older pandas is chosen, as pip's own resolver would."""
    index = VersionedIndex({
        "app": {"1.0": ("numpy>=1.22.4", "beam<2.49,>=2.43", "pandas>=1.3")},
        "beam": {"2.48.0": ("numpy<1.25",), "2.49.0": ("numpy<1.26",)},
        "numpy": {"1.24.4": (), "2.4.6": ()},
        "pandas": {"2.3.3": ("numpy>=1.23.2",), "3.0.0": ("numpy>=1.26",), "3.1.1": ("numpy>=2.0.2",)},
    })
    monkeypatch.setattr(fetch, "run_logged", index)
    chosen = fetch.fetch_wheels(["app==1.0"], tmp_path / "wheels", tmp_path / "log")
    assert sorted(p.name.split("-py3")[0] for p in chosen) == ["app-1.0", "beam-2.48.0", "numpy-1.24.4", "pandas-2.3.3"]
    assert len(index.downloads) == len(set(index.downloads))  # a walk started over downloads nothing again
    with pytest.raises(ImageBuildFailed):  # beam 2.48 needs numpy<1.25: no version meets both
        fetch.fetch_wheels(["beam==2.48.0", "numpy>=2"], tmp_path / "other", tmp_path / "log")
