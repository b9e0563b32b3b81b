"""Evidence survives: written whole or not at all, the history on disk as each event is recorded, a
certificate never overwritten, tracebacks in files of their own, and a reports folder that cannot be
written is exit 3 in one line (not a traceback and Python's status 1, which reads as "anomalies")."""

from __future__ import annotations

import errno
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.certify.certification
import harness.certify.rows
import harness.cli.run
from harness.certify.certificate import write_certificate
from harness.cli import main
from harness.errors import EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE, BadInput, InfrastructureError
from harness.evidence import unique_path, write_evidence, write_new_evidence
from harness.faults.space import Observation
from harness.history import History
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "harness"


def full_disk(*args: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_write_that_fails_leaves_the_old_file_whole_and_no_temporary_file(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    page = write_evidence(tmp_path / "index.html", "old")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(InfrastructureError, match="No space left on device") as refused:
        write_evidence(page, "new")
    assert refused.value.exit_status == EXIT_INFRASTRUCTURE and "\n" not in str(refused.value)
    assert page.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["index.html"]


def test_evidence_is_readable_as_a_plain_write_leaves_it(tmp_path: Path) -> None:
    assert (write_evidence(tmp_path / "index.html", "page").stat().st_mode & 0o777) == 0o644


def test_a_folder_that_cannot_be_made_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "reports").write_text("a file where the reports folder should be")
    target = tmp_path / "reports" / "run" / "result.json"
    with pytest.raises(InfrastructureError, match=re.escape(str(target))):
        write_evidence(target, "{}")


def test_new_evidence_never_replaces_old(tmp_path: Path) -> None:
    first = write_new_evidence(tmp_path / "certificate.json", "first")
    with pytest.raises(BadInput, match="never overwritten") as refused:
        write_new_evidence(first, "second")
    assert refused.value.exit_status == EXIT_BAD_INPUT
    assert first.read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["certificate.json"]


def test_unique_names_even_from_threads_in_the_same_second(tmp_path: Path) -> None:
    found: list[Path] = []
    threads = [threading.Thread(target=lambda: found.append(unique_path(tmp_path, "20260101-000000", ".txt")))
               for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(found)) == 16 and tmp_path / "20260101-000000.txt" in found
    assert tmp_path / "20260101-000000-2.txt" in found


def test_the_history_is_on_disk_as_each_event_is_recorded(tmp_path: Path) -> None:
    history = History(tmp_path / "history.jsonl")
    history.record("fault", fault="kill:driver@txn.commit")
    assert json.loads((tmp_path / "history.jsonl").read_text())["fault"] == "kill:driver@txn.commit"  # not closed
    history.close()


def test_a_history_that_cannot_be_opened_is_the_infrastructures(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("not a folder")
    with pytest.raises(InfrastructureError, match="cannot write"):
        History(tmp_path / "run" / "scenario" / "history.jsonl")


def test_evidence_is_written_only_through_the_atomic_helper() -> None:
    """Reports, certificates, indexes, schedules and reproducers: no module writes them in place."""
    places = [PACKAGE / "report", PACKAGE / "certify", PACKAGE / "cli", PACKAGE / "run", PACKAGE / "explore"]
    in_place = [f"{path.relative_to(PACKAGE)}:{n}" for folder in places for path in sorted(folder.rglob("*.py"))
                for n, line in enumerate(path.read_text().splitlines(), 1)
                if re.search(r"\.write_(text|bytes)\(|open\([^)]*[\"']w", line)]
    assert not in_place, in_place


@pytest.fixture
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    return tmp_path / "reports"


def test_an_unforeseen_error_with_an_unwritable_reports_folder_is_still_one_line_and_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "file" / "reports"))

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[None]:
        raise KeyError("no such network")
        yield

    monkeypatch.setattr(harness.cli.run, "session", session)
    assert main(["run", "--sink", "transactional"]) == EXIT_INFRASTRUCTURE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "KeyError" in err and "traceback not kept: cannot write" in err, err


def test_two_unforeseen_errors_in_one_second_keep_two_tracebacks(
        reports: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("time.strftime", lambda *args: "20260101-000000")

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[None]:
        raise KeyError("no such network")
        yield

    monkeypatch.setattr(harness.cli.run, "session", session)
    kept = []
    for _ in range(2):
        assert main(["run", "--sink", "transactional"]) == EXIT_INFRASTRUCTURE
        kept.append(Path(capsys.readouterr().err.strip().rpartition("(traceback: ")[2].rstrip(")")))
    assert kept[0] != kept[1] and all("no such network" in path.read_text() for path in kept)


def test_a_full_reports_folder_during_a_run_is_one_line_and_3(
        reports: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = SimpleNamespace(report_dir=reports / "run" / "scenario")

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[SimpleNamespace]:
        yield SimpleNamespace(scenario=lambda *args, **kwargs: scenario)

    monkeypatch.setattr(harness.cli.run, "session", session)
    monkeypatch.setattr(os, "fsync", full_disk)
    assert main(["run", "--sink", "transactional"]) == EXIT_INFRASTRUCTURE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "schedule.json" in err and "No space left" in err, err


def test_certify_out_holding_a_certificate_is_refused_before_the_cluster_starts(
        reports: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "certificate"
    old = write_evidence(out / "certificate.json", '{"certified": true}')

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[None]:
        raise AssertionError("the cluster was started before --out was checked")
        yield

    monkeypatch.setattr(harness.certify.rows, "session", session)
    assert main(["certify", "--sink", "transactional", "--out", str(out)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "never overwritten" in err, err
    assert old.read_text() == '{"certified": true}'


def test_a_certificate_is_never_written_over_another(tmp_path: Path) -> None:
    old = write_evidence(tmp_path / "certificate.json", '{"certified": true}')
    with pytest.raises(BadInput, match="never overwritten"):
        write_certificate(tmp_path, resolve_sink("transactional"), load_pipeline("passthrough"),
                          Observation.assumed("transactional", stateful=False), True, 1, [], 0)
    assert old.read_text() == '{"certified": true}'
