"""Delta Lake as a store: a table beside the query's checkpoint on the run's volume, its log read through
the relay (harness.output.delta.table), the driver held at each new version of the log."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harness import versions
from harness.output import object_store
from harness.output.base import Image, Output, Place
from harness.output.object_store import s3a_jars
from harness.output.store_defaults import StoreDefaults

if TYPE_CHECKING:
    from harness.faults.space import FaultClass, Observation
    from harness.versions import Stack


def release(stack: Stack) -> str | None:
    """Delta's release for the Spark line, None for a line it has none for (versions.DELTA_VERSIONS)."""
    return versions.DELTA_VERSIONS.get(stack.line)


def artifact(stack: Stack, delta: str) -> str:
    """Delta's Spark jar: from Delta 4.1 on one per Spark line (`delta-spark_4.1_2.13`; the name without a
    line is the newest line's, which need not be this one), before that one per Scala version."""
    per_line = tuple(int(part) for part in delta.split(".")[:2]) >= (4, 1)
    name = f"delta-spark_{stack.line}_{stack.scala}" if per_line else f"delta-spark_{stack.scala}"
    return f"io.delta:{name}:{delta}"


LOG_ENTRY = re.compile(r"(?:.*/)?_delta_log/(?P<version>[0-9]{20})\.json")  # its commit object: the version's


class DeltaStore(StoreDefaults):
    name = "delta"
    label = "Delta Lake"
    table = True
    state_tables = True
    aliases = ("s3",)  # harness.output.object_store.server.ALIAS: the harness's tunnel reaches it
    stores = ("volume", "s3")
    description = "delta (a Delta table on the run's volume, its latest snapshot and its log)"

    def unsupported(self, stack: Stack) -> str | None:
        if release(stack) is None:
            return (f"Spark {stack.spark}: no Delta Lake release known for its line (known: "
                    f"{', '.join(f'Spark {k}: Delta {v}' for k, v in versions.DELTA_VERSIONS.items())})")
        return None

    def unsupported_on(self, stack: Stack, where: str) -> str | None:
        return object_store.s3a_unsupported(stack) if where == "s3" else None

    def commit_object(self, key: str) -> dict | None:
        entry = LOG_ENTRY.fullmatch(key)
        return {"format": self.name, "version": int(entry["version"])} if entry else None

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        delta = release(stack)
        return {"delta": ("Delta Lake", delta)} if delta else {}

    def servers(self, stack: Stack, where: str) -> dict[str, tuple[str, str]]:
        return object_store.servers(where)

    def jars(self, stack: Stack) -> tuple[str, ...]:
        delta = release(stack)
        return (artifact(stack, delta), *s3a_jars(stack)) if delta else ()

    def wheels(self, stack: Stack) -> tuple[str, ...]:
        # Delta's Python API (`from delta.tables import DeltaTable`), as users' sinks import it; it needs
        # pyspark alone (importlib_metadata only for configure_spark_with_delta_pip, a session's builder)
        delta = release(stack)
        return (f"delta-spark=={delta}",) if delta else ()

    def images(self, where: str) -> tuple[Image, ...]:
        if where != "s3":
            return ()  # a table on the volume needs no server
        from harness.output.object_store.image import VERSITYGW  # the cluster's images module: only when asked
        return (VERSITYGW,)

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        driver = frozenset({"driver"})  # Delta commits on the driver: on S3 by the PUT of its log entry
        return {"table.committed": driver, **({"s3.put": driver} if where == "s3" else {})}

    def fault_classes(self, seen: Observation) -> list[FaultClass]:
        """The table's commit is every table's point (harness.faults.space); on S3 its HTTP commits add theirs."""
        from harness.output.object_store.faults import fault_classes

        return fault_classes(seen)

    def output(self, place: Place) -> Output:
        from harness.output.delta.table import DeltaTable, table_path

        if place.store == "s3":
            from harness.output.object_store.server import BUCKET, attached

            s3 = attached(place.cluster)
            key = f"{BUCKET}/{place.scenario}-table"
            return DeltaTable(s3.files, key, f"s3a://{key}", s3.hadoop_settings(), s3.hadoop_settings(direct=True))
        return DeltaTable(place.files, table_path(place.checkpoint))


STORE = DeltaStore()
