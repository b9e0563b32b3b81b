"""PostgreSQL as a store: a table in the run's PostgreSQL (started on first use, harness.output.postgres.
server), read in a transaction of its own with its rows' transactions (harness.output.postgres.table),
its writers held at their commits, and its commits on the wire (`pg.commit`) read by the gate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import versions
from harness.output.base import Image, Output, Place
from harness.output.store_defaults import StoreDefaults

if TYPE_CHECKING:
    from harness.faults.space import FaultClass, Observation
    from harness.versions import Stack


class PostgresStore(StoreDefaults):
    """Every Spark line; no wheel (psycopg is in every image: versions.image_python_requirements)."""

    name = "postgres"
    label = "PostgreSQL"
    table = True
    state_tables = True
    points = ("pg.commit",)
    aliases = ("postgres",)  # harness.output.postgres.server.ALIAS: the harness's tunnel reaches it
    description = "postgres (a PostgreSQL table, read in a transaction of its own, with its rows' transactions)"

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        return {"postgres": ("PostgreSQL", versions.POSTGRES_PACKAGE.removeprefix("postgresql-")),
                "postgres_jdbc": ("PostgreSQL JDBC", versions.POSTGRES_JDBC)}

    def jars(self, stack: Stack) -> tuple[str, ...]:
        return (f"org.postgresql:postgresql:{versions.POSTGRES_JDBC}",)  # for `df.write.jdbc`

    def images(self, where: str) -> tuple[Image, ...]:
        from harness.output.postgres.image import POSTGRES  # the cluster's images module: only when asked
        return (POSTGRES,)

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        return {point: frozenset() for point in ("table.committed", *self.points)}  # who commits: the sink's choice

    def fault_classes(self, seen: Observation) -> list[FaultClass]:
        from harness.output.postgres.faults import fault_classes

        return fault_classes(seen)

    def output(self, place: Place) -> Output:
        from harness.output.postgres.server import attached
        from harness.output.postgres.table import PostgresTable, table_name

        server, gate = attached(place.cluster), place.cluster.gate
        assert gate is not None, "the gate runs with the cluster"
        return PostgresTable(server.for_harness(), server.for_sinks(), table_name(place.scenario), place.state,
                             lambda pid: gate.backends[pid].role)


STORE = PostgresStore()
