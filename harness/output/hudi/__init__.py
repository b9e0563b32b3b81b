"""Apache Hudi as a store: a copy-on-write or merge-on-read table beside the query's checkpoint on the run's
volume, its timeline and the latest file slices read through the relay (harness.output.hudi.table; a
merge-on-read table's slices merged by hudi-rs), the driver held at each completed write. Spark 3.5 only:
`hudi-spark3.5-bundle_2.12` 1.2.0 is the Hudi bundle that resolves here (there is none for Spark 4.0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.output.base import Output, Place
from harness.output.store_defaults import StoreDefaults

if TYPE_CHECKING:
    from harness.versions import Stack

RELEASES = {"3.5": "1.2.0"}  # Hudi's Spark bundle for each Spark line it has one for here
# Kryo, Hudi's SQL extension and catalog: what Hudi's Spark guide asks of a session
SESSION = {"spark.serializer": "org.apache.spark.serializer.KryoSerializer",
           "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
           "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
           "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar"}


def table_path(checkpoint: str) -> str:
    """Where a scenario's table lives: beside its checkpoint, on the volume drivers and executors share."""
    return f"{checkpoint}-table"


class HudiStore(StoreDefaults):
    name = "hudi"
    label = "Apache Hudi"
    table = True
    state_tables = True
    description = ("hudi (a copy-on-write or merge-on-read Hudi table on the run's volume, its timeline and "
                   "latest file slices, merged; Spark 3.5)")

    def unsupported(self, stack: Stack) -> str | None:
        if stack.line not in RELEASES:
            return (f"Spark {stack.spark}: Hudi's Spark bundle is known here for Spark "
                    f"{', '.join(RELEASES)} only (run with --spark 3.5)")
        return None

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        return {"hudi": ("Apache Hudi", RELEASES[stack.line])} if stack.line in RELEASES else {}

    def jars(self, stack: Stack) -> tuple[str, ...]:
        return (f"org.apache.hudi:hudi-spark{stack.line}-bundle_{stack.scala}:{RELEASES[stack.line]}",) \
            if stack.line in RELEASES else ()

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        return {"table.committed": frozenset({"driver"})}  # Hudi's Spark writes complete on the driver

    def output(self, place: Place) -> Output:
        from harness.output.hudi.table import HudiTable

        return HudiTable(place.files, table_path(place.checkpoint))


STORE = HudiStore()
