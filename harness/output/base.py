"""What an output is to the harness: a place a sink writes to, prepared for a scenario, named to the sink
through its context, and read back as committed records with the store's own commit history.

Two roles. A `Store` is a kind of output (`--output kafka`, `delta`, ...): the Spark line it runs on, the
jars and wheels the Spark image needs for it, the fault classes its commits add, and how to make one
scenario's `Output`. An `Output` is that scenario's topic or table. Each store is one package (or module)
under harness.output, named in harness.output.registry; the rest of the harness asks these two roles
and names no store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from harness.client.reader import ReadResult
from harness.client.records import Record
from harness.driver.table_hold import HOLDS
from harness.history import History
from harness.output.commits import Commit, Files, State
from harness.versions import Stack

# The role sits below the cluster, the faults and the run, which a store's package uses (it sits above them,
# harness.output.registry): their types are named here in comments, as `Any`.
Cluster = Any  # harness.cluster.topology.Cluster
Image = Any  # harness.cluster.images.Image: a store's server's, built where a run needs it
CheckpointFolder = Any  # harness.run.checkpoint.CheckpointFolder
GateHolds = Any  # harness.run.table_watch.GateHolds
FaultClass = Any  # harness.faults.space.FaultClass
Observation = Any  # harness.faults.space.Observation


@dataclass(frozen=True)
class Place:
    """What the harness knows of a scenario when it makes its output."""

    cluster: Cluster
    files: Files  # the run's volume, through the relay
    bootstrap: str  # Kafka's direct listener (the harness's own reads)
    topic: str  # the scenario's output topic
    checkpoint: str  # the query's checkpoint folder on the volume (a table lives beside it)
    scenario: str
    state: bool  # the sink keeps a state table (one row per key)
    store: str = "volume"  # where a table lives: the run's volume, or the run's S3 server (s3)


@dataclass(frozen=True)
class Hold:
    """Where the driver is held at each new table version (harness.driver.table_hold): the folder a
    commit's file appears in, the pattern of that file's name (its version the first group, ASCII digits),
    and the folder the holds are said and answered in."""

    folder: str
    pattern: str
    holds: str
    commits: str = ""  # the query's commit log (`<checkpoint>/commits`), written down as it appears


@dataclass(frozen=True)
class EngineSource:
    """How Spark's own reader reaches a table (harness.run.engine_read): `format` and a path (`delta`, a path
    on the volume), or a table's name in the session's catalog (format ""), with the session's settings.
    `infrastructure`: the read goes over the infrastructure's network (a table on the run's S3 server, read
    past the gate), else it has no network (a table on the volume, mounted read-only)."""

    format: str
    table: str
    settings: dict[str, str]
    infrastructure: bool = False


def holds_folder(table: str) -> str:
    """Where the driver's holds at a table's commits are said and answered: a folder of root's, named for the
    table (harness.driver.table_hold.HOLDS)."""
    return f"{HOLDS}/{table.strip('/').replace('/', '~')}"


class Watcher(Protocol):
    """The watcher of a table's commit point, `table.committed` (harness.run.table_watch)."""

    attributed: dict[int, int]  # version -> the batch Spark ran when it committed (it named none)

    def stop(self) -> None: ...


OnCommit = Callable[[dict, object], None]  # told of each commit that is the point, with its hold to settle


class Output(Protocol):
    """One scenario's output."""

    name: str  # kafka, delta, postgres, ...: the --output it is
    where: str  # the topic, the table's path or name, as reports and errors name it
    unit: str  # what one of its commits is, in explanations: a table version, a transaction
    # its partitions are sequences (a Kafka partition's offsets), so a key's order in one is judged; a table's
    # files are not (an upsert shuffles a batch by key, a writer sorts its rows, a compaction rewrites them)
    ordered: bool
    # its commits set rows by a key the table declares (a primary-key table), known once read: a batch
    # committed again that changed no row is an idempotent repeat, judged as a state table's (checker.repeats)
    keyed: bool

    def prepare(self) -> None:
        """Make the place ready before the sink starts (nothing where the sink or store makes it)."""

    def context(self) -> dict[str, object]:
        """The sink context's fields for this output (harness.driver.sink.SinkContext)."""

    def spark_settings(self) -> dict[str, str]:
        """The Spark settings the driver's session starts with for this output (extensions, catalogs)."""

    def hold(self) -> Hold | None:
        """Where the driver is held at each commit, None where commits are seen another way (or not)."""

    def engine_source(self) -> EngineSource | None:
        """How Spark's own reader reads what was committed, None where it reads no table."""

    def watch(self, folder: CheckpointFolder, history: History, on_commit: OnCommit,
              at_gate: GateHolds | None) -> Watcher | None:
        """The commit point's watcher, started; None where the output has no table commit point. `at_gate`:
        the commits the gate holds for it, where the driver cannot be held (a table on object storage)."""

    def read(self, on_batch: Callable[[list[Record]], None]) -> ReadResult:
        """Everything committed, as records; `on_batch` sees them as they come (a checker works meanwhile)."""

    def commits(self) -> list[Commit]:
        """The store's own commit history (empty where it keeps none the harness reads: Kafka)."""

    def commit_of(self, partition: int) -> int | None:
        """The store's commit (a table version) that holds the records read as `partition`, once read; None
        where a partition is not one commit's (Kafka)."""

    def file_of(self, partition: int) -> str | None:
        """The data file read as `partition` (`bucket/key` on object storage), once read; None where a
        partition is not one file (Kafka, PostgreSQL) or the store is not object storage."""

    def change_of(self, version: int) -> tuple[State, State]:
        """What one of the store's commits (`commits()`) did, for a state table's repeats (a batch committed
        again that changed nothing, or one applied twice): each key's values before and after it. The whole
        table where the store keeps snapshots (Delta); the keys it wrote where it keeps a change log
        (PostgreSQL); ({}, {}) where it keeps neither."""


class Store(Protocol):
    """A kind of output, as `--output` names it."""

    name: str
    label: str  # as prose names it: Kafka, Delta Lake, PostgreSQL
    table: bool  # a table: the table commit point applies, Kafka's write points do not
    state_tables: bool  # its history tells a state table's repeats (a batch applied twice)
    points: tuple[str, ...]  # gate points its commits cross (PostgreSQL's wire), beside table.committed
    aliases: tuple[str, ...]  # the containers it may start, which the harness's own tunnels reach
    stores: tuple[str, ...]  # where its tables may live (the `store` setting): volume, s3
    description: str  # one line for --output's help

    def unsupported(self, stack: Stack) -> str | None:
        """Why this store cannot run with these versions (a Spark line it has no release for), else None."""

    def unsupported_on(self, stack: Stack, where: str) -> str | None:
        """Why its tables cannot live on `where` (one of `stores`) with these versions, else None."""

    def commit_object(self, key: str) -> dict | None:
        """For a table on object storage: whether an object's key is its table's commit (the gate's point
        `s3.put` when it is written), as its `format` and `version` (None when its name says none); None for
        any other key."""

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        """Its pinned parts for these versions: key -> (what, version), for reports and certificates."""

    def releases_on(self, stack: Stack) -> tuple[Stack, ...]:
        """The stacks a campaign crosses on this one's Spark line: one per release of its own the line offers
        where a run may ask for one (Iceberg's), else the stack itself."""

    def servers(self, stack: Stack, where: str) -> dict[str, tuple[str, str]]:
        """The servers it starts for a table on `where` (`images`), as `versions` names its parts."""

    def jars(self, stack: Stack) -> tuple[str, ...]:
        """Maven coordinates (group:artifact:version, then `!group:artifact` for each of its own dependencies
        left out) the Spark image needs for it."""

    def wheels(self, stack: Stack) -> tuple[str, ...]:
        """Python packages (name==version) the Spark image installs for its sinks, without dependencies."""

    def images(self, where: str) -> tuple[Image, ...]:
        """The images of the servers it starts for a table on `where` (the `store` setting), beside every
        cluster's: its own (harness.cluster.images.Image, their inputs in its package); a run builds or pulls
        those only, `images build` every store's."""

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        """The commit points a sink of this store reaches with its table on `where` (the `store` setting) and
        their senders' roles, as a dry run assumes them (no baseline yet): empty roles where not known."""

    def fault_classes(self, seen: Observation) -> list[FaultClass]:
        """The fault classes its own commit points add to a table sink's space (harness.faults.space)."""

    def output(self, place: Place) -> Output:
        """One scenario's output."""
