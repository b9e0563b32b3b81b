"""Apache Paimon as a store: a table in Paimon's filesystem catalog whose warehouse is beside the query's
checkpoint on the run's volume, its snapshots and the rows of the latest one read through the relay
(harness.output.paimon.table), the driver held at each new snapshot. Spark 3.5 only: Paimon's Spark
jar for that line (`paimon-spark-3.5` 0.9.0) is the one that resolves from Maven Central."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.output.base import Output, Place
from harness.output.store_defaults import StoreDefaults

if TYPE_CHECKING:
    from harness.versions import Stack

RELEASES = {"3.5": "0.9.0"}  # Paimon's Spark jar for each Spark line it has one for here
CATALOG = "harness"  # the Spark catalog the driver's session names the table in
IDENTIFIER = f"{CATALOG}.db.output"  # the context's table_name: one warehouse per scenario


def warehouse(checkpoint: str) -> str:
    """A scenario's warehouse: beside its checkpoint, on the volume drivers and executors share."""
    return f"{checkpoint}-warehouse"


def table_folder(checkpoint: str) -> str:
    """Where Paimon's filesystem catalog keeps the table: `<warehouse>/<database>.db/<table>`."""
    return f"{warehouse(checkpoint)}/db.db/output"


def session_settings(checkpoint: str) -> dict[str, str]:
    """The catalog and Paimon's SQL extensions."""
    return {"spark.sql.extensions": "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions",
            f"spark.sql.catalog.{CATALOG}": "org.apache.paimon.spark.SparkCatalog",
            f"spark.sql.catalog.{CATALOG}.warehouse": f"file:{warehouse(checkpoint)}"}


class PaimonStore(StoreDefaults):
    name = "paimon"
    label = "Apache Paimon"
    table = True
    state_tables = True
    description = ("paimon (a Paimon append or primary-key table in a filesystem catalog on the run's volume, read "
                   "merged; Spark 3.5)")

    def unsupported(self, stack: Stack) -> str | None:
        if stack.line not in RELEASES:
            return (f"Spark {stack.spark}: Paimon's Spark jar is known here for Spark "
                    f"{', '.join(RELEASES)} only (run with --spark 3.5)")
        return None

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        return {"paimon": ("Apache Paimon", RELEASES[stack.line])} if stack.line in RELEASES else {}

    def jars(self, stack: Stack) -> tuple[str, ...]:
        return (f"org.apache.paimon:paimon-spark-{stack.line}:{RELEASES[stack.line]}",) \
            if stack.line in RELEASES else ()

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        return {"table.committed": frozenset({"driver"})}  # Paimon's Spark writes commit on the driver

    def output(self, place: Place) -> Output:
        from harness.output.paimon.table import PaimonTable

        return PaimonTable(place.files, table_folder(place.checkpoint), place.checkpoint)


STORE = PaimonStore()
