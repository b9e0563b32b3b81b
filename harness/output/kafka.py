"""A Kafka topic as an output: read with read_committed to the last stable offset (harness.client.reader).
The default store: the topic is made with the scenario's other topics, every sink context names it."""

from __future__ import annotations

from collections.abc import Callable

from harness.client.reader import CommittedReader, ReadResult
from harness.client.records import Record
from harness.output.base import EngineSource, Hold, Output, Place, Watcher
from harness.output.commits import Commit, State
from harness.output.store_defaults import StoreDefaults


class KafkaTopic:
    """The scenario's output topic (made with the scenario's other topics; the context's `topic`)."""

    name = "kafka"
    unit = "transaction"
    ordered = True  # a partition is a sequence: a key's records in one keep the pipeline's order
    keyed = False  # a topic keeps every record

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.where = topic

    def prepare(self) -> None:
        """Nothing: the scenario makes its topics together."""

    def context(self) -> dict[str, object]:
        return {}  # the topic is in every context

    def spark_settings(self) -> dict[str, str]:
        return {}

    def engine_source(self) -> EngineSource | None:
        return None

    def hold(self) -> Hold | None:
        return None

    def watch(self, *_: object) -> Watcher | None:
        return None  # a transaction's commit is a gate point

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """Every committed record; records of aborted transactions counted as evidence."""
        return CommittedReader(self.bootstrap).read(self.where, count_uncommitted=True, on_batch=on_batch)

    def commits(self) -> list[Commit]:
        return []

    def commit_of(self, partition: int) -> int | None:
        return None

    def file_of(self, partition: int) -> str | None:
        return None

    def change_of(self, version: int) -> tuple[State, State]:
        return {}, {}  # a topic keeps no versions


class KafkaStore(StoreDefaults):
    """Kafka as a store: nothing to add to the images, its commit points are the gate's (harness.faults.space)."""

    name = "kafka"
    label = "Kafka"
    table = False
    state_tables = False
    description = "kafka (the output topic, read_committed)"

    def versions(self, stack: object) -> dict[str, tuple[str, str]]:
        return {}  # the brokers' version is the run's own

    def jars(self, stack: object) -> tuple[str, ...]:
        return ()  # Spark's Kafka connector is in every image

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        return {}  # a Kafka sink's points are drawn from its kind (harness.faults.space.Observation.assumed)

    def output(self, place: Place) -> Output:
        return KafkaTopic(place.bootstrap, place.topic)


STORE = KafkaStore()
