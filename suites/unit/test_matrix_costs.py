"""benchmarks/matrix_costs.py: the certificate it reads is the one its certify wrote, not one an earlier run
left in a kept reports folder."""

from __future__ import annotations

import argparse
import types
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ARGS = argparse.Namespace(sink="transactional", output="kafka", store=None, quick=True, brokers=None)


@pytest.fixture(scope="module")
def matrix_costs(benchmark_script):  # type: ignore[no-untyped-def]
    return benchmark_script("matrix_costs")


def earlier_run(reports: Path) -> Path:
    certificate = reports / "20200101-000000-aaaaaa" / "certificate" / "certificate.json"
    certificate.parent.mkdir(parents=True)
    certificate.write_text("{}")
    return certificate


def test_a_certify_that_wrote_none_is_not_given_an_earlier_runs_certificate(
        matrix_costs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    earlier_run(tmp_path)
    monkeypatch.setattr(matrix_costs.subprocess, "run", lambda command: types.SimpleNamespace(returncode=3))
    with pytest.raises(SystemExit, match="exited 3 and wrote no new certificate"):
        matrix_costs.certify(ARGS, tmp_path)


def test_the_certificate_read_is_the_one_this_run_wrote(
        matrix_costs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    earlier_run(tmp_path)
    written = tmp_path / "20100101-000000-bbbbbb" / "certificate" / "certificate.json"  # sorts before the earlier

    def run(command: list[str]) -> types.SimpleNamespace:
        written.parent.mkdir(parents=True)
        written.write_text("{}")
        return types.SimpleNamespace(returncode=0)

    monkeypatch.setattr(matrix_costs.subprocess, "run", run)
    path, _, _, status = matrix_costs.certify(ARGS, tmp_path)
    assert (path, status) == (written, 0)
