"""Apache Iceberg as a store: a table in a Hadoop catalog whose warehouse is beside the query's checkpoint
on the run's volume, read through the relay with pyiceberg (harness.output.iceberg.table), the driver
held at each new metadata version.

The catalog: Iceberg's Hadoop catalog, kept in the table's own folder (`metadata/v<N>.metadata.json`,
committed by an atomic rename), needs no service and is read with the rest of the table through the relay.
A JDBC catalog on the run's PostgreSQL would add a server to every Iceberg run for no gain in what is
tested here: a commit is still one atomic swap of the metadata pointer. With `--store s3` the table is in
Iceberg's REST catalog, its files on the run's S3 server (harness.output.iceberg.rest): there a commit
crosses HTTP, through the gate.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.output import object_store
from harness.output.base import Image, Output, Place
from harness.output.postgres import PostgresStore
from harness.output.store_defaults import StoreDefaults
from harness.versions import ICEBERG_REST, ICEBERG_VERSIONS

if TYPE_CHECKING:
    from harness.output.base import FaultClass, Observation
    from harness.versions import Stack

CATALOG = "harness"  # the Spark catalog the driver's session names the table in
TABLE = "output"
IDENTIFIER = f"{CATALOG}.db.{TABLE}"  # the context's table_name: one warehouse per scenario (a namespace on REST)


def warehouse(checkpoint: str) -> str:
    """A scenario's warehouse: beside its checkpoint, on the volume drivers and executors share."""
    return f"{checkpoint}-warehouse"


EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"  # MERGE INTO, procedures
# its commit object on S3, the table's metadata: `v<N>.metadata.json` in a Hadoop table, `<5-digit sequence>-<uuid>
# .metadata.json` from a catalog; a codec suffix such as `.gz.metadata.json` when compressed
METADATA_KEY = re.compile(r"(?:.*/)?metadata/(?P<name>[^/]+)\.metadata\.json")
METADATA_VERSION = re.compile(r"v?(?P<version>[0-9]+)(?:-[0-9a-fA-F-]{36})?(?:\.[a-z0-9]+)?")


def session_settings(checkpoint: str) -> dict[str, str]:
    """The catalog and Iceberg's SQL extensions (MERGE INTO, the metadata tables' procedures)."""
    return {"spark.sql.extensions": EXTENSIONS,
            f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
            f"spark.sql.catalog.{CATALOG}.type": "hadoop",
            f"spark.sql.catalog.{CATALOG}.warehouse": warehouse(checkpoint)}


class IcebergStore(StoreDefaults):
    name = "iceberg"
    label = "Apache Iceberg"
    table = True
    state_tables = True
    aliases = ("catalog", "s3")  # harness.output.iceberg.rest.ALIAS and the S3 server's: the harness's tunnels
    stores = ("volume", "s3")
    description = ("iceberg (an Iceberg table in a Hadoop catalog on the run's volume, or with --store s3 in a "
                   "REST catalog on the run's S3 server, its current snapshot and history)")

    def unsupported(self, stack: Stack) -> str | None:
        if stack.iceberg is None:
            return (f"Spark {stack.spark}: no Iceberg Spark runtime known for its line (known: "
                    f"{', '.join(f'Spark {k}: Iceberg {v[0]}' for k, v in ICEBERG_VERSIONS.items())})")
        return None

    def commit_object(self, key: str) -> dict | None:
        metadata = METADATA_KEY.fullmatch(key)
        if metadata is None:
            return None
        version = METADATA_VERSION.fullmatch(metadata["name"])
        return {"format": self.name, "version": int(version["version"]) if version else None}

    def versions(self, stack: Stack) -> dict[str, tuple[str, str]]:
        return {"iceberg": ("Apache Iceberg", stack.iceberg)} if stack.iceberg else {}

    def releases_on(self, stack: Stack) -> tuple[Stack, ...]:
        return tuple(replace(stack, iceberg_asked=release) for release in ICEBERG_VERSIONS.get(stack.line, ()))

    def servers(self, stack: Stack, where: str) -> dict[str, tuple[str, str]]:
        if where != "s3":
            return {}  # the Hadoop catalog on the volume is files
        return {**object_store.servers(where), "iceberg_rest": ("Iceberg REST catalog", ICEBERG_REST),
                "postgres": PostgresStore().versions(stack)["postgres"]}  # where the catalog keeps its tables

    def jars(self, stack: Stack) -> tuple[str, ...]:
        release = stack.iceberg
        if release is None:
            return ()
        runtime = f"org.apache.iceberg:iceberg-spark-runtime-{stack.line}_{stack.scala}:{release}"
        return runtime, f"org.apache.iceberg:iceberg-aws-bundle:{release}"  # S3FileIO, for tables on S3

    def images(self, where: str) -> tuple[Image, ...]:
        if where != "s3":
            return ()  # the Hadoop catalog on the volume needs no server
        from harness.output.iceberg.image import ICEBERG_REST  # the cluster's images module: only when asked
        from harness.output.object_store.image import VERSITYGW
        from harness.output.postgres.image import POSTGRES
        return (VERSITYGW, POSTGRES, ICEBERG_REST)

    def assumed_senders(self, where: str = "volume") -> dict[str, frozenset[str]]:
        driver = frozenset({"driver"})  # Iceberg's Spark writes commit on the driver: on S3 in the REST catalog
        return {"table.committed": driver, **({"catalog.commit": driver} if where == "s3" else {})}

    def fault_classes(self, seen: Observation) -> list[FaultClass]:
        """The table's commit is every table's point (harness.faults.space); on S3 its HTTP commits add theirs."""
        from harness.output.object_store.faults import fault_classes

        return fault_classes(seen)

    def output(self, place: Place) -> Output:
        from harness.output.iceberg.table import IcebergTable

        if place.store == "s3":
            from harness.output.iceberg.rest import attached
            from harness.output.iceberg.rest_table import RestIcebergTable

            catalog = attached(place.cluster)
            namespace = "s_" + re.sub(r"[^a-z0-9]+", "_", place.scenario.lower()).strip("_")
            return RestIcebergTable(catalog.objects.files, catalog, namespace, TABLE, catalog.spark_settings())

        return IcebergTable(place.files, f"{warehouse(place.checkpoint)}/db/output", place.checkpoint)


STORE = IcebergStore()
