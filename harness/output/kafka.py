"""A Kafka topic as an output: read with read_committed to the last stable offset (harness.client.reader)."""

from __future__ import annotations

from collections.abc import Callable

from harness.client.reader import CommittedReader, ReadResult
from harness.client.records import Record
from harness.output.commits import Commit, State


class KafkaTopic:
    """The scenario's output topic (made with the scenario's other topics; the context's `topic`)."""

    name = "kafka"
    unit = "transaction"

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.where = topic

    def prepare(self) -> None:
        """Nothing: the scenario makes its topics together."""

    def sink_arguments(self) -> list[str]:
        return []  # the topic is in every context

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """Every committed record; records of aborted transactions counted as evidence."""
        return CommittedReader(self.bootstrap).read(self.where, count_uncommitted=True, on_batch=on_batch)

    def commits(self) -> list[Commit]:
        return []

    def commit_of(self, partition: int) -> int | None:
        return None

    def change_of(self, version: int) -> tuple[State, State]:
        return {}, {}  # a topic keeps no versions
