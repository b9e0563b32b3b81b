"""benchmarks/row_costs.py: each phase's median over the rows of one kind, rows per minute over the
window from the first row's start to the last row's end, and a row's CPU time by container."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def row_costs(benchmark_script):  # type: ignore[no-untyped-def]
    return benchmark_script("row_costs")


def rows() -> list[dict]:
    return [{"row": "baseline", "started": 0.0, "ended": 60.0, "figures": {"row": 60.0, "driver_container": 1.0}},
            {"row": "kill", "started": 60.0, "ended": 150.0, "figures": {"row": 90.0, "fault_to_next_driver": 30.0}},
            {"row": "baseline", "started": 0.0, "ended": 80.0, "figures": {"row": 80.0, "driver_container": 3.0}},
            {"row": "kill", "started": 80.0, "ended": 180.0, "figures": {"row": 100.0}}]


def test_each_phase_is_the_median_over_the_rows_that_have_it(row_costs) -> None:  # type: ignore[no-untyped-def]
    assert row_costs.medians(rows(), "baseline") == {"row": 70.0, "driver_container": 2.0}
    assert row_costs.medians(rows(), "kill") == {"row": 95.0, "fault_to_next_driver": 30.0}


def test_rows_per_minute_count_from_the_common_start_to_the_last_end(row_costs) -> None:  # type: ignore[no-untyped-def]
    assert row_costs.rate({"rows": rows()}) == (4, 3.0, 4 / 3)


def test_every_phase_it_prints_is_one_the_rows_record(row_costs) -> None:  # type: ignore[no-untyped-def]
    from harness.run.phases import DRIVER_PARTS

    recorded = {"row", "batches", "batch_median", "first_batch", "query_to_first_batch", "fault_to_recovery",
                "fault_to_next_driver", "restart_kill_to_submit", "restart_query_to_batch", "last_batch_to_read",
                *(f"{who}_{part}" for who in ("driver", "restart") for part, _, _ in DRIVER_PARTS)}
    keys = {key for _, key in row_costs.PHASES}
    assert {key for key in keys if not key.startswith(("seconds:", "cpu:"))} <= recorded
    assert {key for key in keys if key.startswith("cpu:")} == set(row_costs.CpuReader.between({}, {}))


def test_a_rows_cpu_is_each_containers_time_since_its_start_by_role(row_costs) -> None:  # type: ignore[no-untyped-def]
    assert [row_costs.role(alias) for alias in ("driver-kill-driver-txn-pre-commit", "spark-worker-2", "kafka-3",
                                                "kafka", "spark-master", "gate", "toxiproxy")] == \
        ["driver", "workers", "kafka", "kafka", "rest", "rest", "rest"]
    before = {"w1": ("workers", 10.0), "k": ("kafka", 4.0)}
    after = {"w1": ("workers", 13.5), "k": ("kafka", 4.5), "d": ("driver", 7.0)}  # the driver started within the row
    assert row_costs.CpuReader.between(before, after) == {"cpu:driver": 7.0, "cpu:workers": 3.5, "cpu:kafka": 0.5,
                                                          "cpu:rest": 0.0, "cpu:all": 11.0}
