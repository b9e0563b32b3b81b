"""The swimlanes of a scenario on three brokers: a lane per broker, a broker fault on the broker it
resolved to, and a takeover marked on the broker that took a partition (or coordination) over."""

import re

import pytest

from harness.report.events import describe
from harness.report.swimlanes import swimlanes_svg

pytestmark = pytest.mark.unit

EVENTS = [
    {"t": 0.0, "type": "scenario.start", "brokers": 3},
    {"t": 1.0, "type": "kafka.leader", "partition": "__transaction_state-1", "leader": "kafka-2", "was": None,
     "role": "coordinator"},
    {"t": 2.0, "type": "point", "point": "txn.commit", "container": "spark-worker-1", "connection": 1,
     "transactional_id": "out-p1", "committed": True, "broker": 2},
    {"t": 2.1, "type": "fault.inject", "fault": "kill:coordinator@txn.commit",
     "trigger": {"container": "spark-worker-1"}},
    {"t": 2.2, "type": "fault.target", "fault": "kill:coordinator@txn.commit", "container": "kafka-2", "node": 2,
     "why": "the coordinator of transactional id 'out-p1'"},
    {"t": 2.4, "type": "effect", "fault": "kill:coordinator@txn.commit", "effect": "container kafka-2 gone (SIGKILL)"},
    {"t": 11.0, "type": "kafka.leader", "partition": "__transaction_state-1", "leader": "kafka-3", "was": "kafka-2",
     "role": "coordinator"},
    {"t": 30.0, "type": "recovery", "fault": "kill:coordinator@txn.commit",
     "detail": "container kafka-2 started again"},
]


def test_a_lane_per_broker_the_fault_on_the_resolved_one_and_the_takeover_marked() -> None:
    svg = swimlanes_svg(EVENTS, {}, {})
    lanes = re.findall(r'class="lane">([^<]+)</text>', svg)
    assert lanes == ["batches", "spark-worker-1", "kafka-1", "kafka-2", "kafka-3", "output"]
    fault_y = re.search(r'<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="34" fill="#f5b7b1"', svg)
    kafka_2_y = re.search(r'<rect x="0" y="([^"]+)" width="1000" height="34" fill="[^"]+"/><text x="6" y="[^"]+" '
                          r'class="lane">kafka-2<', svg)
    assert fault_y and kafka_2_y and fault_y.group(1) == kafka_2_y.group(1), "shaded on kafka-2's lane"
    assert "kafka-3 now coordinator of __transaction_state-1 (was kafka-2)" in svg
    assert svg.count('fill="#d35400"') == 1, "the first leaders are not changes"


def test_the_events_say_where_a_fault_was_aimed_and_who_took_over() -> None:
    assert describe(EVENTS[4]) == ("fault kill:coordinator@txn.commit aimed at kafka-2: the coordinator of "
                                   "transactional id 'out-p1'")
    assert describe(EVENTS[6]) == ("kafka-3 took __transaction_state-1 over from kafka-2 (the coordinator of its "
                                   "transactional ids)")
