"""A fault space's terms: what a fault-free run showed (Observation) and one cell of the space drawn from it
(FaultClass), for the spaces of each engine (harness.faults.space: Spark's, harness.faults.flink_space: Flink's)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from harness.driver.state_stores import DEFAULT_STATE_STORE
from harness.faults.spec import TABLE, TABLE_POINTS, TRANSACTION_POINTS, TRANSACTIONAL, kind_from_points

DEFAULT_TRANSACTION_TIMEOUT_S = 60.0  # librdkafka's transaction.timeout.ms default, when no InitProducerId showed one
# "just above" a timeout: past it with room for the broker's abort to land (the broker looks for timed-out
# transactions every second, harness/images/kafka/start-broker.sh, against Kafka's default of ten)
ABOVE_MARGIN_S = 5.0


@dataclass(frozen=True)
class Observation:
    """What a fault-free run showed: the roles that sent each gate point, the smallest transaction
    timeout the sink asked for, whether the query kept state, and how often each point came (the
    occurrences `explore` draws other than the certificate's)."""

    senders: dict[str, frozenset[str]] = field(default_factory=dict)
    transaction_timeout_s: float | None = None
    stateful: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    brokers: int = 1  # Kafka brokers it ran on: from MIN_BROKERS on, the broker classes apply
    output: str = "kafka"  # where the sink wrote (harness.output): a table's sink is of kind `table`
    engine: str = "spark"  # the stream engine it ran on (harness.settings.ENGINES)

    @classmethod
    def from_events(cls, events: Iterable[dict], stateful: bool, brokers: int = 1,
                    output: str = "kafka", engine: str = "spark") -> Observation:
        """From a run's history events (its gate `point` events as requests arrived, and a table output's
        `table.committed` commits that came before Spark's commit: by the driver, unless the event names
        the role whose commit it was) on `brokers` brokers."""
        senders: dict[str, set[str]] = {}
        counts: dict[str, int] = {}
        timeouts = []
        for event in events:
            if event["type"] in TABLE_POINTS and event["point"]:  # Delta: the driver; PostgreSQL: who committed
                senders.setdefault(event["type"], set()).add(event.get("role", "driver"))
                counts[event["type"]] = counts.get(event["type"], 0) + 1
            elif event["type"] == "point" and event.get("phase") != "response":  # a commit's answer: counted in
                senders.setdefault(event["point"], set()).add(event["role"])
                counts[event["point"]] = counts.get(event["point"], 0) + 1
                if event.get("transaction_timeout_ms"):
                    timeouts.append(event["transaction_timeout_ms"] / 1000)
        return cls({p: frozenset(r) for p, r in senders.items()}, min(timeouts) if timeouts else None, stateful,
                   counts, brokers, output, engine)

    @classmethod
    def assumed(cls, kind: str, stateful: bool, brokers: int = 1, output: str = "delta",
                where: str = "volume") -> Observation:
        """What a sink of this kind would show, its senders' roles unknown (a dry run: no baseline yet); a
        table sink's, for its `output` with its table on `where`, as its store assumes it (Delta's driver
        commits the table, on S3 by a PUT; PostgreSQL's commits go by the gate)."""
        if kind == TABLE:
            from harness.output.registry import store

            return cls(store(output).assumed_senders(where), None, stateful, brokers=brokers, output=output)
        points = (*TRANSACTION_POINTS,) if kind == TRANSACTIONAL else ("produce", "produce.sent")
        return cls({p: frozenset() for p in points}, None, stateful, brokers=brokers)

    def to_dict(self) -> dict:
        """As JSON: a shard's certificate carries it, so that merging shards draws the space again."""
        return {"senders": {point: sorted(roles) for point, roles in sorted(self.senders.items())},
                "transaction_timeout_s": self.transaction_timeout_s, "stateful": self.stateful,
                "counts": dict(sorted(self.counts.items())), "brokers": self.brokers, "output": self.output,
                "engine": self.engine}

    @classmethod
    def from_dict(cls, data: dict) -> Observation:
        """From `to_dict`'s JSON."""
        return cls({point: frozenset(roles) for point, roles in data["senders"].items()},
                   data["transaction_timeout_s"], data["stateful"], dict(data["counts"]), data["brokers"],
                   data.get("output", "kafka"), data.get("engine", "spark"))

    @property
    def kind(self) -> str:
        """transactional or plain (Kafka writes, as the gate saw them), or table (a table output)."""
        from harness.output.registry import store

        return TABLE if store(self.output).table else kind_from_points(set(self.senders))

    @property
    def timeout_s(self) -> float:
        """The transaction timeout the timing classes are drawn from."""
        return self.transaction_timeout_s or DEFAULT_TRANSACTION_TIMEOUT_S


@dataclass(frozen=True)
class FaultClass:
    """One cell of the space, and the row that tries it (`faults`; empty when it cannot be tried yet)."""

    action: str
    target: str
    point: str
    sender: str  # the role whose request the point matched (driver, executors), or "any"
    timing: str  # instant, 10s, below-/above-txn-timeout, above-network-timeout, speculation, live, store-...
    row: str  # the row's name (a test id)
    faults: tuple[str, ...] = ()
    what: str = ""  # what it tries, in words
    quick: bool = False  # in the covering subset a quick certification tries
    live: bool = False
    state_store: str = DEFAULT_STATE_STORE
    speculation: bool = False  # the row runs with spark.speculation on
    brokers: int = 1  # the Kafka brokers it needs
    ways: tuple[tuple[str, ...], ...] = ()  # other steps trying the class, in turn, when `faults` is ineffective

    @property
    def name(self) -> str:
        sender = "" if self.sender == "any" else f"~{self.sender}"
        return f"{self.action}:{self.target}@{self.point}{sender}/{self.timing}"

    @property
    def tried(self) -> bool:
        return bool(self.faults) or self.live or self.speculation


def spark_only(fault: FaultClass) -> bool:
    """A class only Spark's engine has: two attempts of one task (spark.speculation), a state store's commit,
    and the live-input rows, whose scenarios only Spark's side runs (a Flink job drains a backlog)."""
    return fault.speculation or fault.live or fault.point == "state.committed"


def just_above(timeout_s: float) -> int:
    """Seconds a hold lasts to be past a transaction timeout, the broker's abort landed."""
    return round(timeout_s + ABOVE_MARGIN_S)
