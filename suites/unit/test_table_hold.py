"""The hold at a table's commits (harness.driver.table_hold), with a real process in the JVM's place."""

from __future__ import annotations

import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.driver.table_hold import CommitHold, first_child_of_init, names_in
from harness.output.delta.log import VERSION_FILE

pytestmark = pytest.mark.unit


def state(pid: int) -> str:
    """The kernel's letter for a process's state: T when stopped."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def eventually(check, seconds: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_the_jvm_is_the_first_child_of_the_init_whatever_the_processes_call_themselves(tmp_path: Path) -> None:
    def process(pid: int, name: str, ppid: int, started: int) -> None:
        (tmp_path / str(pid)).mkdir()
        rest = ["S", str(ppid), *["0"] * 17, str(started), "0"]  # the start time is the 22nd field
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({name}) {' '.join(rest)}\n")

    process(1, "docker-init", 0, 100)
    process(7, "java", 1, 101)  # the container's command
    process(5, "java) S 1 0", 1, 900)  # a decoy orphaned to the init, with a lower pid and a crafted name
    process(30, "python3", 7, 150)  # the app, the JVM's child
    (tmp_path / "self").mkdir()
    assert first_child_of_init(str(tmp_path)) == 7


def test_inotify_events_name_the_commit_logs_batches_only() -> None:
    def event(wd: int, name: bytes) -> bytes:
        padded = name + b"\0" * (16 - len(name))
        return struct.pack("iIII", wd, 0x80, 0, len(padded)) + padded

    events = event(1, b"3") + event(2, b"4") + event(1, b".3.abc.tmp") + event(1, b"12")
    assert names_in(events, {1: "/c/commits", 2: "/t/_delta_log"}, "/c/commits") == [3, 12]


def test_a_new_version_stops_the_jvm_until_the_harness_answers_and_commits_are_written_down(tmp_path: Path) -> None:
    log, holds, commits = tmp_path / "_delta_log", tmp_path / "holds", tmp_path / "commits"
    log.mkdir()
    commits.mkdir()  # Spark makes it as the query starts, a batch before its first file
    (log / "00000000000000000000.json").write_text("")  # there when the hold starts: not held
    jvm = subprocess.Popen(["sleep", "60"])
    try:
        hold = CommitHold(str(log), VERSION_FILE.pattern, str(holds), "tok", str(commits), jvm.pid)
        threading.Thread(target=hold.run, daemon=True).start()
        assert eventually(lambda: (holds / "tok.ready").exists())
        assert (holds / "tok.ready").read_text() == "ok"
        (log / "00000000000000000001.json").write_text("")
        assert eventually(lambda: (holds / "tok-1.held").exists())
        assert eventually(lambda: state(jvm.pid) == "T")  # a stop lands once the kernel next runs the process
        (commits / "0").write_text("")  # Spark's commit, while held (the sink let its JVM go on)
        (commits / "0").rename(tmp_path / "hidden")  # and hidden at once
        assert eventually(lambda: (holds / "tok.commits").exists())
        assert (holds / "tok.commits").read_text() == "0\n"  # whole when it appears
        (holds / "tok-1.release").write_text("")
        assert eventually(lambda: state(jvm.pid) != "T")
        assert not (holds / "tok-0.held").exists()
    finally:
        jvm.kill()
        jvm.wait()


def test_the_holds_are_on_the_run_s_volume_where_the_containers_mount_it() -> None:
    from harness.cluster.spark import CHECKPOINTS
    from harness.driver.table_hold import HOLDS

    assert HOLDS.rpartition("/")[0] == CHECKPOINTS
