"""Which Kafka node a fault step aims at, resolved as it fires (Kafka's answers faked: pure logic)."""

from dataclasses import dataclass, field

import pytest

from harness.faults.nodes import resolve_node
from harness.gate.points import GateEvent, Peer
from harness.gate.protocol import ADD_PARTITIONS_TO_TXN, END_TXN, PRODUCE, RequestInfo

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Node:
    node_id: int
    alias: str


@dataclass
class Kafka:
    """Leaders by partition; the coordinator of each transactional id; the controller."""

    leaders: dict = field(default_factory=lambda: {("out", 2): 3})
    coordinators: dict = field(default_factory=lambda: {"out-p1": 2})

    def broker(self, node_id: int) -> Node:
        return Node(node_id, f"kafka-{node_id}")

    def leader(self, topic: str, partition: int) -> Node:
        return self.broker(self.leaders[(topic, partition)])

    def coordinator(self, transactional_id: str) -> Node:
        return self.broker(self.coordinators[transactional_id])

    def controller(self) -> Node:
        return self.broker(1)


@dataclass
class Gate:
    last_transactional_id: str | None = "out-p1"
    writes: dict = field(default_factory=lambda: {"out-p1": ("out", 2)})


def event(api_key: int, broker: int = 1, **fields: object) -> GateEvent:
    return GateEvent("txn.commit", Peer("spark-worker-1", "executors", "10.0.0.5", 4000, broker), 1,
                     RequestInfo(api_key, 1, 7, "rdkafka", **fields))  # type: ignore[arg-type]


def test_each_target_names_its_node_and_why() -> None:
    kafka, gate = Kafka(), Gate()
    assert resolve_node("broker", None, kafka, gate) == (Node(1, "kafka-1"), "broker 1")
    assert resolve_node("broker:3", None, kafka, gate)[0].alias == "kafka-3"
    assert resolve_node("controller", None, kafka, gate)[0].node_id == 1
    commit = event(END_TXN, transactional_id="out-p1")
    assert resolve_node("coordinator", commit, kafka, gate) == (
        Node(2, "kafka-2"), "the coordinator of transactional id 'out-p1'")
    assert resolve_node("leader", event(PRODUCE, broker=3, transactional_id="out-p1"), kafka, gate) == (
        Node(3, "kafka-3"), "the leader the produce request was sent to")
    added = event(ADD_PARTITIONS_TO_TXN, transactional_id="out-p1", partitions=(("out", 2),))
    assert resolve_node("leader", added, kafka, gate)[1] == "the leader of out-2"


def test_off_a_request_the_last_transactional_id_and_its_last_write_are_used() -> None:
    kafka, gate = Kafka(), Gate()
    assert resolve_node("coordinator", None, kafka, gate)[0].alias == "kafka-2"  # a batch or time point
    assert resolve_node("leader", event(END_TXN, transactional_id="out-p1"), kafka, gate)[0].alias == "kafka-3"


def test_nothing_to_aim_at_is_a_lookup_error() -> None:
    empty = Gate(last_transactional_id=None, writes={})
    with pytest.raises(LookupError, match="no transactional id seen yet"):
        resolve_node("coordinator", None, Kafka(), empty)
    with pytest.raises(LookupError, match="no partition written yet"):
        resolve_node("leader", None, Kafka(), empty)
