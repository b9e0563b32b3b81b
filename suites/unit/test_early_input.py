"""Bad input on the command line is one line and exit 2 before any cluster starts: a scenario name that
is not one safe folder name, a saved schedule with a step that could never fire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import harness.cli.run
from harness.cli import main
from harness.client.topics import unique_name
from harness.errors import BadInput
from harness.report.folders import checked_name, scenario_dir

pytestmark = pytest.mark.unit

UNSAFE = ["../outside", "a/b", "..", ".", "two words", "-leading-dash", "x..y", "tab\there", "nul\0", "é", "",
          "x" * 221]


@pytest.fixture
def no_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The run command with a session that fails the test when it is opened; the reports folder."""
    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[None]:
        raise AssertionError("the cluster was started before the input was checked")
        yield

    monkeypatch.setattr(harness.cli.run, "session", session)
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    return tmp_path / "reports"


@pytest.mark.parametrize("name", UNSAFE)
def test_an_unsafe_scenario_name_is_refused_before_the_cluster_starts(
        no_cluster: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert main(["run", "--sink", "transactional", f"--name={name}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "scenario name" in err and "letters, digits" in err, err
    assert not no_cluster.exists()


@pytest.mark.parametrize("name", UNSAFE)
def test_a_scenario_folder_never_leads_outside_the_run_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               name: str) -> None:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path))
    with pytest.raises(BadInput):
        scenario_dir("run", name)


@pytest.mark.parametrize("name", ["scenario", "kill-driver-txn.commit", "test_x_kill-sender-txn.pre_commit-2",
                                  "explore-baseline-1a2b", "A9"])
def test_names_the_harness_gives_are_safe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path))
    assert checked_name(name) == name
    assert scenario_dir("run", name) == tmp_path.resolve() / "run" / name


@pytest.mark.parametrize("step, token", [
    ({"action": "kill", "target": "driver", "point": "batch.planned", "number": 1.5}, "bad batch id '1.5'"),
    ({"action": "pause", "target": "driver", "point": "produce", "duration": 0}, "bad duration '0s'"),
    ({"action": "kill", "target": "driver", "point": "time", "number": -1}, "bad seconds '-1'"),
])
def test_a_saved_schedule_is_checked_before_the_cluster_starts(
        no_cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], step: dict, token: str) -> None:
    saved = tmp_path / "schedule.json"
    saved.write_text(json.dumps([step]))
    assert main(["run", "--sink", "transactional", "--schedule", str(saved)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and token in err, err


def test_the_longest_name_still_makes_kafka_topic_names() -> None:
    longest = checked_name("x" * 220)
    assert all(len(unique_name(longest, role)) <= 249 for role in ("in", "out", "markers"))
