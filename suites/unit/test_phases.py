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
                              "first_to_last_batch": 19.0, "fault_to_recovery": 13.0, "last_batch_to_read": 10.0}


def test_a_scenario_that_never_started_its_query_has_only_what_it_reached() -> None:
    assert phases([{"t": 1.0, "type": "scenario.start"}, {"t": 9.0, "type": "incomplete"}]) == {}
