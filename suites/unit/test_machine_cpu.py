"""benchmarks/machine_cpu.py: the machine's busy CPU time is every count but idle and iowait, and its floor
is that time over the cores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def machine_cpu(benchmark_script):  # type: ignore[no-untyped-def]
    return benchmark_script("machine_cpu")


def test_busy_counts_all_but_idle_and_iowait(machine_cpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hz = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    #              user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text(f"cpu  {hz} {hz} {hz} {100 * hz} {50 * hz} {hz} {hz} {hz} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert machine_cpu.busy_seconds(stat) == pytest.approx(6.0)


def test_no_count_where_the_kernel_gives_none(machine_cpu, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert machine_cpu.busy_seconds(tmp_path / "absent") is None
    (tmp_path / "empty").write_text("")
    assert machine_cpu.busy_seconds(tmp_path / "empty") is None


def test_the_floor_is_the_busy_time_over_the_cores(machine_cpu) -> None:  # type: ignore[no-untyped-def]
    assert machine_cpu.floor(240.0, cores=2) == ("the machine busy 240 CPU s, which on its 2 cores take at least "
                                                 "120 s whatever the schedule")
