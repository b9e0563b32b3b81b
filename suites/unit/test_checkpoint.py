"""Reading Spark's checkpoint folder: planned and committed batches, end offsets per partition.

The folder is read with the relay's file operations (harness.gate.relay), as scenarios read the volume.
"""

import base64
from pathlib import Path

import pytest

from harness.gate import relay
from harness.history import History, read_history
from harness.run.checkpoint import BatchWatcher, CheckpointFolder

pytestmark = pytest.mark.unit


class VolumeFiles:
    """The relay's own file operations on a folder standing for the checkpoint volume (no socket)."""

    def walk(self, path: str) -> list[str]:
        return relay.file_request({"op": "walk", "path": path})["files"]

    def tree(self, path: str) -> tuple[list[str], list[str]]:
        answer = relay.file_request({"op": "tree", "path": path})
        return answer["folders"], answer["files"]

    def mtime(self, path: str) -> float:
        return relay.file_request({"op": "mtime", "path": path})["mtime"]

    def read_text(self, path: str) -> str:
        return base64.b64decode(relay.file_request({"op": "read", "path": path})["data"]).decode()


@pytest.fixture(autouse=True)
def volume_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "ROOT", str(tmp_path.resolve()))


def folder_of(path: Path) -> CheckpointFolder:
    return CheckpointFolder(VolumeFiles(), str(path))


def write_batch(root: Path, batch: int, offsets: str, committed: bool) -> None:
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{offsets}\n')
    (root / "offsets" / f".{batch}.crc").write_text("crc")
    if committed:
        (root / "commits").mkdir(exist_ok=True)
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_planned_committed_and_consumed(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, '{"in":{"1":5,"0":7}}', committed=True)
    write_batch(tmp_path, 1, '{"in":{"1":9,"0":7}}', committed=False)
    folder = folder_of(tmp_path)
    assert folder.planned() == [0, 1]
    assert folder.committed() == [0]
    assert folder.end_offsets(1) == {"in": {0: 7, 1: 9}}
    assert folder.consumed("in") == {0: 7, 1: 5}
    assert folder.consumed("other") == {}


def test_empty_folder_has_no_batches(tmp_path: Path) -> None:
    folder = folder_of(tmp_path / "missing")
    assert folder.planned() == [] and folder.committed() == [] and folder.consumed("in") == {}


def test_consumed_some_batches_back_and_state(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, '{"in":{"0":3}}', committed=True)
    write_batch(tmp_path, 1, '{"in":{"0":8}}', committed=True)
    folder = folder_of(tmp_path)
    assert folder.consumed("in", lag=1) == {0: 3} and folder.consumed("in", lag=2) == {}
    assert not folder.stateful()
    (tmp_path / "state" / "0" / "_metadata").mkdir(parents=True)
    (tmp_path / "state" / "0" / "_metadata" / "metadata").write_text("v1")
    assert folder.stateful()


def test_state_versions_name_the_batches_whose_state_was_committed(tmp_path: Path) -> None:
    for operator, partition, name in [(0, 0, "1.delta"), (0, 1, "2.delta"), (0, 1, "2.snapshot"),
                                      (1, 0, "3.zip"), (1, 0, "4.changelog"), (0, 0, ".1.delta.crc")]:
        (tmp_path / "state" / str(operator) / str(partition)).mkdir(parents=True, exist_ok=True)
        (tmp_path / "state" / str(operator) / str(partition) / name).write_text("")
    (tmp_path / "state" / "0" / "_metadata").mkdir()
    assert folder_of(tmp_path).state_committed() == [0, 1, 2, 3]


def test_the_relay_refuses_paths_outside_the_volume(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside"):
        relay.file_request({"op": "read", "path": str(tmp_path / ".." / "elsewhere")})


def test_a_file_written_through_the_relay_is_whole_and_its_folders_made(tmp_path: Path) -> None:
    target = tmp_path / "scenario-code" / "sink.py"
    relay.file_request({"op": "write", "path": str(target), "data": base64.b64encode(b"x = 1").decode()})
    assert target.read_text() == "x = 1" and not target.with_name("sink.py.part").exists()


def test_names_spark_does_not_write_are_ignored_not_the_end_of_the_watcher(tmp_path: Path) -> None:
    """The sink writes beside Spark: `commits/²` is a digit to str.isdigit() and not to int(), and a batch
    watcher that raised on it would stop reporting batches (and firing the faults at them)."""
    write_batch(tmp_path / "q", 0, '{"in":{"0":3}}', committed=True)
    for name in ("commits/²", "commits/٣", "offsets/abc", "offsets/-1", "offsets/1.5", "state/0/0/².delta",
                 "state/0/0/x.delta"):
        (tmp_path / "q" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "q" / name).write_text("v1\n")
    folder = folder_of(tmp_path / "q")
    assert folder.planned() == [0] and folder.committed() == [0] and folder.state_committed() == []
    history = History(tmp_path / "history.jsonl")
    BatchWatcher(folder, history).poll()
    history.close()
    recorded = read_history(tmp_path / "history.jsonl", ("batch.planned", "batch.committed"))
    assert [(event["type"], event["batch"]) for event in recorded] == [("batch.planned", 0), ("batch.committed", 0)]
