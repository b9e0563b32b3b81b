"""Files written, read and walked through the relay's file service stay in the checkpoint volume whatever
links a client planted there: no folder, `.part` file or name is followed out of it (nor within it: a link
checked and then swapped could lead anywhere), and nothing is written at its root.
The relay runs in a container; its file logic is exercised here on a folder standing in for the volume."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from harness.gate import relay

pytestmark = pytest.mark.unit


@pytest.fixture
def volume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The volume (relay.ROOT) and, beside it, a folder a planted link points to."""
    root = (tmp_path / "checkpoints").resolve()
    root.mkdir()
    (tmp_path / "outside").mkdir()
    monkeypatch.setattr(relay, "ROOT", str(root))
    return root


def write(path: Path | str, data: bytes = b"x = 1") -> dict:
    """A write as the service takes it, its error as the harness would read it."""
    try:
        return relay.file_request({"op": "write", "path": str(path), "data": base64.b64encode(data).decode()})
    except (OSError, ValueError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def test_a_write_makes_its_folders_and_leaves_no_part_file(volume: Path) -> None:
    assert write(volume / "q-code" / "deep" / "sink.py") == {}
    assert (volume / "q-code" / "deep" / "sink.py").read_bytes() == b"x = 1"
    assert not (volume / "q-code" / "deep" / "sink.py.part").exists()


def test_a_planted_part_link_is_refused_and_its_target_untouched(volume: Path) -> None:
    target = volume.parent / "outside" / "victim"
    target.write_text("precious")
    (volume / "q-code").mkdir()
    (volume / "q-code" / "sink.py.part").symlink_to(target)
    assert "symbolic link" in write(volume / "q-code" / "sink.py")["error"]
    assert target.read_text() == "precious" and not (volume / "q-code" / "sink.py").exists()


def test_a_dangling_part_link_creates_nothing_outside(volume: Path) -> None:
    target = volume.parent / "outside" / "created"
    (volume / "q-code").mkdir()
    (volume / "q-code" / "sink.py.part").symlink_to(target)
    assert "error" in write(volume / "q-code" / "sink.py")
    assert not target.exists()


def test_a_linked_folder_is_not_followed_out_of_the_volume(volume: Path) -> None:
    (volume / "q-code").symlink_to(volume.parent / "outside")
    assert "error" in write(volume / "q-code" / "sink.py")
    assert list((volume.parent / "outside").iterdir()) == []


def test_a_linked_folder_inside_the_volume_is_not_followed_either(volume: Path) -> None:
    (volume / "real").mkdir()
    (volume / "alias").symlink_to(volume / "real")
    assert "error" in write(str(volume / "alias") + "/sub/sink.py")
    assert list((volume / "real").iterdir()) == []


def test_a_link_at_the_name_is_replaced_never_followed(volume: Path) -> None:
    (volume / "q").mkdir()
    other = volume / "q" / "other"
    other.write_text("kept")
    (volume / "q" / "sink.py").symlink_to(other)
    assert write(volume / "q" / "sink.py", b"new") == {}
    assert other.read_text() == "kept" and not (volume / "q" / "sink.py").is_symlink()
    assert (volume / "q" / "sink.py").read_bytes() == b"new"


def test_a_stale_part_file_of_a_crashed_write_is_replaced(volume: Path) -> None:
    (volume / "q").mkdir()
    (volume / "q" / "sink.py.part").write_text("half")
    assert write(volume / "q" / "sink.py") == {}
    assert (volume / "q" / "sink.py").read_bytes() == b"x = 1" and not (volume / "q" / "sink.py.part").exists()


@pytest.mark.parametrize("path", ["{root}/stray", "{root}", "{root}/..", "{root}/../outside/x", "{root}/q/../../x",
                                  "relative/x", "/etc/x"])
def test_writes_at_the_root_or_outside_the_volume_are_refused(volume: Path, path: str) -> None:
    assert "error" in write(path.format(root=volume))
    assert list(volume.iterdir()) == [] and list((volume.parent / "outside").iterdir()) == []


def test_folders_and_name_read_the_path_as_written(volume: Path) -> None:
    assert relay.folders_and_name(f"{volume}/q/offsets/0") == (["q", "offsets"], "0")
    with pytest.raises(ValueError, match="at the root"):
        relay.folders_and_name(f"{volume}/stray")


def read(path: Path | str) -> dict:
    """A read as the service takes it, its error as the harness would read it."""
    try:
        return relay.file_request({"op": "read", "path": str(path)})
    except (OSError, ValueError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


@pytest.mark.parametrize("link_to", ["outside", "checkpoints/real"])
def test_a_read_or_walk_through_a_linked_folder_is_refused(volume: Path, link_to: str) -> None:
    """A folder on the way that is a link is refused wherever it points: a path checked and then opened
    again by name follows whatever the sink swapped in meanwhile."""
    target = volume.parent / link_to
    target.mkdir(exist_ok=True)
    (target / "secret").write_text("not the sink's to read")
    (volume / "q").mkdir()
    (volume / "q" / "offsets").symlink_to(target)
    assert "error" in read(volume / "q" / "offsets" / "secret")
    with pytest.raises(OSError):
        relay.file_request({"op": "walk", "path": str(volume / "q" / "offsets")})
    (volume / "q" / "commits").mkdir()
    (volume / "q" / "commits" / "0").write_text("v1")
    assert relay.file_request({"op": "walk", "path": str(volume / "q")}) == {"files": ["commits/0"]}  # not entered


def test_a_read_of_a_linked_name_or_a_fifo_is_refused(volume: Path) -> None:
    (volume / "q").mkdir()
    (volume / "q" / "real").write_text("v1")
    assert base64.b64decode(read(volume / "q" / "real")["data"]) == b"v1"
    (volume / "q" / "alias").symlink_to(volume / "q" / "real")
    assert "error" in read(volume / "q" / "alias")
    os.mkfifo(volume / "q" / "pipe")  # opened as a file, it would block the relay until a writer came
    assert "not a regular file" in read(volume / "q" / "pipe")["error"]
