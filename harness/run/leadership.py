"""Who leads what, watched while a scenario runs on several brokers: a `kafka.leader` event each time a
partition of the scenario's topics, or of `__transaction_state` (whose leaders are the transaction
coordinators), gets another leader. The report marks them on the brokers' lanes."""

from __future__ import annotations

from harness.cluster.brokers import TRANSACTION_STATE, KafkaCluster
from harness.history import History
from harness.run.poller import Poller

POLL_S = 1.0


class LeadershipWatch:
    """Polls the cluster's metadata in a thread; records the first leaders and every change."""

    def __init__(self, kafka: KafkaCluster, topics: list[str], history: History) -> None:
        self.kafka = kafka
        self.topics = [*topics, TRANSACTION_STATE]
        self.history = history
        self.leaders: dict[str, int] = {}
        self._admin = kafka.admin()
        self._aliases = {broker.node_id: broker.alias for broker in kafka.brokers}
        self._poller = Poller("leadership-watch", POLL_S, self._poll)

    def start(self) -> LeadershipWatch:
        self._poller.start()
        return self

    def stop(self) -> None:
        self._poller.stop(timeout=10)

    def _poll(self) -> None:
        try:
            topics = self._admin.list_topics(timeout=5).topics
        except Exception:  # noqa: BLE001 - no metadata this second (a broker is coming back): next one
            return
        for name in self.topics:
            for number, partition in getattr(topics.get(name), "partitions", {}).items():
                key = f"{name}-{number}"
                was = self.leaders.get(key)
                if partition.leader == was:
                    continue
                self.leaders[key] = partition.leader
                self.history.record("kafka.leader", partition=key, leader=self._aliases.get(partition.leader, "none"),
                                    was=self._aliases.get(was) if was is not None else None,
                                    role="coordinator" if name == TRANSACTION_STATE else "leader")
