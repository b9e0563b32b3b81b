"""Which Kafka node a fault step names, resolved as it fires: `broker`, `broker:N`, `controller`,
`coordinator` (of the sender's transactional id, else of the last one the gate saw) and `leader` (of
the partition the request writes to: a Produce's own broker, the first partition an AddPartitionsToTxn
adds, else the partition the sender last added)."""

from __future__ import annotations

from harness.cluster.brokers import KafkaCluster
from harness.cluster.kafka import KafkaBroker
from harness.gate.points import GateEvent
from harness.gate.protocol import PRODUCE
from harness.gate.proxy import KafkaGate


def resolve_node(target: str, event: GateEvent | None, kafka: KafkaCluster,
                 gate: KafkaGate | None) -> tuple[KafkaBroker, str]:
    """The node, and why it is that one (for the report); LookupError when there is none to aim at."""
    request = event.request if event is not None else None
    transactional_id = (request.transactional_id if request else None) or (gate.last_transactional_id if gate
                                                                            else None)
    if target.startswith("broker"):
        node = kafka.broker(int(target.partition(":")[2] or 1))
        return node, f"broker {node.node_id}"
    if target == "controller":
        return kafka.controller(), "the active controller (the quorum's leader)"
    if target == "coordinator":
        if transactional_id is None:
            raise LookupError("no transactional id seen yet: no coordinator to aim at")
        return kafka.coordinator(transactional_id), f"the coordinator of transactional id {transactional_id!r}"
    if event is not None and event.request.api_key == PRODUCE:  # sent to the leader of what it writes
        return kafka.broker(event.peer.broker), "the leader the produce request was sent to"
    written = (request.partitions[0] if request and request.partitions else
               gate.writes.get(transactional_id or "") if gate else None)
    if written is None:
        raise LookupError("no partition written yet: no leader to aim at")
    return kafka.leader(*written), f"the leader of {written[0]}-{written[1]}"
