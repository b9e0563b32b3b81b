"""A scenario's time is split into phases from its history; a phase it never reached is absent."""

import pytest

from harness.run.phases import phases

pytestmark = pytest.mark.unit


def test_phases_follow_the_history() -> None:
    events = [
        {"t": 100.0, "type": "scenario.start"}, {"t": 130.0, "type": "container.start"},
        {"t": 131.0, "type": "batch.planned", "batch": 0}, {"t": 135.0, "type": "batch.committed", "batch": 0},
        {"t": 136.0, "type": "batch.planned", "batch": 1}, {"t": 137.0, "type": "fault.inject"},
        {"t": 150.0, "type": "batch.committed", "batch": 1}, {"t": 160.0, "type": "read"},
    ]
    assert phases(events) == {"start_to_query": 30.0, "query_to_first_batch": 1.0, "batches": 2, "batch_median": 9.0,
                              "first_batch": 4.0, "first_to_last_batch": 19.0, "fault_to_recovery": 13.0,
                              "last_batch_to_read": 10.0}


def test_a_scenario_that_never_started_its_query_has_only_what_it_reached() -> None:
    assert phases([{"t": 1.0, "type": "scenario.start"}, {"t": 9.0, "type": "incomplete"}]) == {}


def test_a_driver_s_start_and_its_replacement_after_a_fault_are_split_by_their_own_times() -> None:
    events = [
        {"t": 100.0, "type": "scenario.start"},
        {"t": 130.0, "type": "container.start", "role": "driver", "restart": 0, "submitted": 110.0, "running": 112.0,
         "session": 124.0},
        {"t": 131.0, "type": "batch.planned", "batch": 0}, {"t": 135.0, "type": "batch.committed", "batch": 0},
        {"t": 136.0, "type": "batch.planned", "batch": 1}, {"t": 137.0, "type": "fault.inject"},
        {"t": 160.0, "type": "container.start", "role": "driver", "restart": 1, "submitted": 139.0, "running": 140.5,
         "session": 152.0},
        {"t": 171.0, "type": "batch.committed", "batch": 1}, {"t": 175.0, "type": "read"},
    ]
    found = phases(events)
    assert {k: v for k, v in found.items() if k.startswith(("driver_", "restart_", "fault_"))} == {
        "driver_container": 2.0, "driver_jvm_to_session": 12.0, "driver_session_to_query": 6.0,
        "fault_to_recovery": 34.0, "fault_to_next_driver": 23.0, "restart_kill_to_submit": 2.0,
        "restart_container": 1.5, "restart_jvm_to_session": 11.5, "restart_session_to_query": 8.0,
        "restart_query_to_batch": 11.0}


def test_a_driver_start_without_its_times_has_no_parts() -> None:
    events = [{"t": 100.0, "type": "scenario.start"}, {"t": 130.0, "type": "container.start", "restart": 0}]
    assert phases(events) == {"start_to_query": 30.0}
