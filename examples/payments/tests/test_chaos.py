"""The payments pipeline keeps exactly-once through a driver killed at the commit of its transaction.

Runs with `pytest -m chaos` (the harness's pytest plugin provides `eo_scenario` and the cluster)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.chaos
PROJECT = Path(__file__).resolve().parents[1]


def test_payments_survive_a_driver_kill_at_commit(eo_scenario):
    result = eo_scenario(pipeline=str(PROJECT / "pipelines" / "payments.py"),
                         sink=f"{PROJECT / 'sinks' / 'payments_sink.py'}:sink",
                         faults=["kill:driver@txn.commit"], records=5_000)
    assert result.events("effect"), "the driver kill fired but had no effect"
    assert result.exactly_once, result.summary()
