"""What an output is to the harness: a place a sink writes to, prepared for a scenario, named to the sink
through its context, and read back as committed records with the store's own commit history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from harness.client.reader import ReadResult
from harness.client.records import Record
from harness.output.commits import Commit, State
from harness.settings import SETTINGS

OUTPUTS = SETTINGS["output"].choices or ()  # the --output choices


class Output(Protocol):
    """One scenario's output."""

    name: str  # kafka, delta, postgres: the --output it is
    where: str  # the topic, the table's path or name, as reports and errors name it
    unit: str  # what one of its commits is, in explanations: a table version, a transaction

    def prepare(self) -> None:
        """Make the place ready before the sink starts (nothing where the sink or store makes it)."""

    def sink_arguments(self) -> list[str]:
        """The driver app's arguments that fill this output's fields of the sink's context."""

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """Everything committed, as records; `on_batch` sees them as they come (a checker works meanwhile)."""

    def commits(self) -> list[Commit]:
        """The store's own commit history (empty where it keeps none the harness reads: Kafka)."""

    def commit_of(self, partition: int) -> int | None:
        """The store's commit (a table version) that holds the records read as `partition`, once read; None
        where a partition is not one commit's (Kafka)."""

    def change_of(self, version: int) -> tuple[State, State]:
        """What one of the store's commits (`commits()`) did, for a state table's repeats (a batch committed
        again that changed nothing, or one applied twice): each key's values before and after it. The whole
        table where the store keeps snapshots (Delta); the keys it wrote where it keeps a change log
        (PostgreSQL); ({}, {}) where it keeps neither."""
