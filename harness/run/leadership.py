"""Who leads what, watched while a scenario runs on several brokers: a `kafka.leader` event each time a
partition of the scenario's topics, or of `__transaction_state` (whose leaders are the transaction
coordinators), gets another leader. The report marks them on the brokers' lanes."""

from __future__ import annotations

import threading

from harness.cluster.brokers import TRANSACTION_STATE, KafkaCluster
from harness.history import History

POLL_S = 1.0


class LeadershipWatch:
    """Polls the cluster's metadata in a thread; records the first leaders and every change."""

    def __init__(self, kafka: KafkaCluster, topics: list[str], history: History) -> None:
        self.kafka = kafka
        self.topics = [*topics, TRANSACTION_STATE]
        self.history = history
        self.leaders: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leadership-watch", daemon=True)

    def start(self) -> LeadershipWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        admin = self.kafka.admin()
        aliases = {broker.node_id: broker.alias for broker in self.kafka.brokers}
        while not self._stop.wait(POLL_S):
            try:
                topics = admin.list_topics(timeout=5).topics
            except Exception:  # noqa: BLE001 - no metadata this second (a broker is coming back): next one
                continue
            for name in self.topics:
                for number, partition in getattr(topics.get(name), "partitions", {}).items():
                    key = f"{name}-{number}"
                    was = self.leaders.get(key)
                    if partition.leader == was:
                        continue
                    self.leaders[key] = partition.leader
                    self.history.record("kafka.leader", partition=key, leader=aliases.get(partition.leader, "none"),
                                        was=aliases.get(was) if was is not None else None,
                                        role="coordinator" if name == TRANSACTION_STATE else "leader")
