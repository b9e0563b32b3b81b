"""The Kafka cluster: N KRaft nodes, each broker and controller in one process (combined mode), and what
the harness asks of it as a whole. Which broker coordinates a transactional id, leads a partition or is
the active controller changes under faults, so it is read at the moment a fault fires, from Kafka's
own sources: the partition of `__transaction_state` a transactional id maps to and that partition's
leader (metadata), a partition's leader (metadata), the quorum's leader (each node's `quorum-state`).

Combined mode, not controllers apart: three more JVMs would cost about a third more memory and start
time on a two-core machine, and Kafka's own system tests run both. It means that a killed controller
is a killed broker too, and that two nodes down lose the quorum; an ISR shrink is therefore made by
cutting replication (each broker's internal listener is reached through toxiproxy), not by killing.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka.admin import AdminClient
from testcontainers.core.network import Network

from harness.client.client_log import logged
from harness.cluster.kafka import CONTROLLER_PORT, INTERNAL_PORT, KafkaBroker, cluster_id
from harness.errors import NotReady

TRANSACTION_STATE = "__transaction_state"
TRANSACTION_STATE_PARTITIONS = 4  # transaction.state.log.num.partitions of the image
QUORUM_STATE = "/var/lib/kafka/__cluster_metadata-0/quorum-state"
REPLICATION = 3  # the replication factor of every topic, once there are that many brokers
MIN_ISR = 2
IN_SYNC_STABLE_S = 12.0  # past replica.lag.time.max.ms (the image: 10 s): a follower unable to fetch is out by then
FRESH_STABLE_S = 2.0  # two more answers, where every node's view is fresh (in_sync_stable_s)
FRESH_VIEW = frozenset({"kill", "stop", "partition"})  # actions after which no node answers from a stale view


def in_sync_stable_s(brokers: int, actions: set[str]) -> float:
    """How long "every replica in sync" must hold before healed faults on Kafka's nodes (their `actions`)
    count as over. A single node has no follower and no other node's view: its first answer is the truth.
    After kills and cut links only, every view is fresh (a KRaft broker started again answers clients only
    once caught up with the metadata log; the controllers' quorum never runs through the links a partition
    cuts) and a follower back in an ISR got there by fetching: two more answers. A node paused or cut off
    the network may answer from the view it had meanwhile, and a follower unable to fetch leaves the ISR
    only after replica.lag.time.max.ms: past that."""
    if brokers == 1:
        return 0.0
    return FRESH_STABLE_S if actions and actions <= FRESH_VIEW else IN_SYNC_STABLE_S


def java_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit): how Kafka maps a transactional id."""
    value = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def transaction_state_partition(transactional_id: str, partitions: int = TRANSACTION_STATE_PARTITIONS) -> int:
    """The `__transaction_state` partition whose leader coordinates `transactional_id` (Kafka's Utils.abs)."""
    hashed = java_hash(transactional_id)
    return (0 if hashed == -(2**31) else abs(hashed)) % partitions


class KafkaCluster:
    """The nodes, started together; `internal(n)` is where the others reach node n's replication listener
    (a single broker has no followers: it advertises its own)."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], count: int,
                 internal: Callable[[int], str]) -> None:
        if count < 1:
            raise ValueError("a Kafka cluster needs at least one broker")
        aliases = ["kafka"] if count == 1 else [f"kafka-{n}" for n in range(1, count + 1)]
        voters = ",".join(f"{n}@{alias}:{CONTROLLER_PORT}" for n, alias in enumerate(aliases, 1))
        shared = {"cluster": cluster_id(), "voters": voters, "replication": min(REPLICATION, count),
                  "min_isr": min(MIN_ISR, count)}
        self.brokers = [KafkaBroker(image, network, labels, node_id=n, alias=alias, **shared,
                                    internal_address=internal(n) if count > 1 else f"{alias}:{INTERNAL_PORT}")
                        for n, alias in enumerate(aliases, 1)]

    @property
    def bootstrap_direct(self) -> str:
        """Bootstrap servers for the harness's own clients on the host."""
        return ",".join(broker.bootstrap_direct for broker in self.brokers)

    @property
    def bootstrap_chaos(self) -> str:
        """Bootstrap servers for the system under test, inside the network."""
        return ",".join(broker.bootstrap_chaos for broker in self.brokers)

    def with_chaos_advertised(self, address: Callable[[int], str]) -> KafkaCluster:
        for broker in self.brokers:
            broker.with_chaos_advertised(address(broker.node_id))
        return self

    def start(self) -> KafkaCluster:
        """Every node at once (a node waits for the quorum), then until the metadata names them all."""
        with ThreadPoolExecutor(max_workers=len(self.brokers)) as pool:
            for future in [pool.submit(broker.start) for broker in self.brokers]:
                future.result()
        self._wait_for_brokers(timeout=60)
        return self

    def admin(self) -> AdminClient:
        return AdminClient(logged({"bootstrap.servers": self.bootstrap_direct}))

    def broker(self, node_id: int) -> KafkaBroker:
        for broker in self.brokers:
            if broker.node_id == node_id:
                return broker
        raise LookupError(f"no broker {node_id}: this cluster has {len(self.brokers)} (--brokers)")

    def leader(self, topic: str, partition: int) -> KafkaBroker:
        """The broker that leads a partition now."""
        metadata = self.admin().list_topics(topic, timeout=10).topics[topic]
        if metadata.error is not None or partition not in metadata.partitions:
            raise LookupError(f"no partition {topic}-{partition}: {metadata.error}")
        leader = metadata.partitions[partition].leader
        if leader < 0:
            raise LookupError(f"{topic}-{partition} has no leader now")
        return self.broker(leader)

    def coordinator(self, transactional_id: str) -> KafkaBroker:
        """The broker that coordinates a transactional id now."""
        return self.leader(TRANSACTION_STATE, transaction_state_partition(transactional_id))

    def controller(self) -> KafkaBroker:
        """The active controller: the leader of the latest epoch any running node's quorum state names."""
        best: tuple[int, int] | None = None
        for broker in self.brokers:
            try:
                status, text = broker.output(["cat", QUORUM_STATE])
            except Exception:  # noqa: BLE001 - a node down or paused knows nothing now
                continue
            if status == 0:
                state = json.loads(text)
                if state.get("leaderId", -1) >= 0 and (best is None or state["leaderEpoch"] > best[0]):
                    best = (state["leaderEpoch"], state["leaderId"])
        if best is None:
            raise LookupError("no node names a quorum leader")
        return self.broker(best[1])

    def out_of_sync(self) -> list[str]:
        """Partitions whose ISR is short of their replicas (every topic, the internal ones too)."""
        topics = self.admin().list_topics(timeout=10).topics
        return [f"{name}-{p}: in sync {sorted(part.isrs)} of {sorted(part.replicas)}"
                for name, topic in topics.items() for p, part in topic.partitions.items()
                if set(part.isrs) != set(part.replicas) or part.leader < 0]

    def wait_in_sync(self, timeout: float, stable: float = IN_SYNC_STABLE_S) -> list[str]:
        """Wait until every replica is in sync again (after a broker fault heals) and stays so for `stable`
        seconds; what is still not. One answer is not enough: a node just reconnected answers metadata
        from the cache it had while cut off (every ISR full), and a follower back but unable to fetch
        leaves the ISR only after replica.lag.time.max.ms."""
        deadline = time.monotonic() + timeout
        since = math.inf  # when every answer since has said "in sync"
        while True:
            try:
                behind = self.out_of_sync()
            except Exception as error:  # noqa: BLE001 - no metadata yet: a broker is still coming back
                behind = [f"no metadata: {error}"]
            now = time.monotonic()
            since = math.inf if behind else min(since, now)
            if now - since >= stable:
                return []
            if now > deadline:
                return behind or [f"in sync for only {now - since:.0f} s of the {stable:g} s asked"]
            time.sleep(1.0)

    def _wait_for_brokers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            try:
                seen = len(self.admin().list_topics(timeout=5).brokers)
                if seen == len(self.brokers):
                    return
            except Exception:  # noqa: BLE001 - any client error means not ready yet
                pass
            time.sleep(0.5)
        raise NotReady(f"metadata names {seen} of {len(self.brokers)} brokers on {self.bootstrap_direct}\n"
                       f"{self.brokers[0].log_tail()}")
