"""A table read as its users read it: Spark's own batch read (`spark.read.format(...).load(path)`) in local
mode, in a container of the run's Spark image with the run's volume mounted read-only and no network. Where
the harness's reader finds an anomaly in a table, what Spark's read returns is said beside it, since that is
what a user of the table sees: the same rows, a read that fails (a file its metadata sizes otherwise), or
other rows (the harness's reader and the format's disagree, which the result says)."""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import TYPE_CHECKING

from harness.cluster.engine import docker_client
from harness.cluster.labels import labels
from harness.cluster.spark import CHECKPOINTS, SOURCE

if TYPE_CHECKING:
    from harness.client.records import Records
    from harness.cluster.topology import Cluster
    from harness.output.base import EngineSource

RUN_TIMEOUT_S = 300
SCRIPT = """
import base64, json, sys
from pyspark.sql import SparkSession
settings = json.loads(sys.argv[1])
builder = SparkSession.builder.master("local[1]").config("spark.driver.host", "127.0.0.1") \\
    .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
for key, value in settings.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
table = spark.read.format(sys.argv[2]).load(sys.argv[3]) if sys.argv[2] else spark.table(sys.argv[3])
frame = table.selectExpr("CAST(key AS BINARY)", "CAST(value AS BINARY)")
for key, value in frame.toLocalIterator():
    print("ROW " + json.dumps([None if key is None else base64.b64encode(key).decode(),
                               None if value is None else base64.b64encode(value).decode()]))
spark.stop()
"""
Row = tuple[bytes | None, bytes | None]  # (key, value)


class EngineReadFailed(Exception):
    """Spark's read of the table ended in an error: its last line, as a user would see it."""


def spark_rows(cluster: Cluster, source: EngineSource) -> Counter[Row]:
    """(key, value) of each row Spark reads from `source`'s table; EngineReadFailed with Spark's error when the
    read fails."""
    container = docker_client().containers.create(
        cluster.images.spark.tag, ["python3", "-c", SCRIPT, json.dumps(source.settings), source.format, source.table],
        volumes={cluster.checkpoints: {"bind": CHECKPOINTS, "mode": "ro"},
                 cluster.package: {"bind": f"{SOURCE}/harness", "mode": "ro"}},
        network_mode=cluster.network.name if source.infrastructure else "none", hostname="localhost",
        environment={"SPARK_LOCAL_IP": "127.0.0.1"}, labels=labels(cluster.run_id))
    try:
        container.start()
        status = container.wait(timeout=RUN_TIMEOUT_S)["StatusCode"]
        said = container.logs(stdout=True, stderr=False).decode(errors="replace")
        if status != 0:
            raise EngineReadFailed(error_line(container.logs(stdout=False, stderr=True).decode(errors="replace")))
    finally:
        container.remove(force=True)
    rows: Counter[Row] = Counter()
    for line in said.splitlines():
        if line.startswith("ROW "):
            key, value = (None if cell is None else base64.b64decode(cell) for cell in json.loads(line[4:]))
            rows[key, value] += 1
    return rows


def error_line(stderr: str) -> str:
    """The line of a failed read that names its error (Python's last exception line), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if ("Error" in line or "Exception" in line) and ":" in line
             and not line.startswith(("at ", "File "))]
    return (named or lines or ["no output"])[-1][:300]


def compared(engine: Counter[Row], records: Records) -> dict:
    """What Spark's read returned, beside the harness's read of the same table (`records`)."""
    harness: Counter[Row] = Counter(zip(records.keys, records.values, strict=True))
    found = {"rows": sum(engine.values()), "distinct": len(engine),
             "repeated": sum(count - 1 for count in engine.values()), "agrees": engine == harness}
    if not found["agrees"]:
        found.update(only_spark=sum((engine - harness).values()), only_harness=sum((harness - engine).values()))
    return found


def said(read: dict) -> str:
    """One sentence of an engine read, for the console and the report."""
    if "error" in read:
        return f"Spark's read of the table fails: {read['error']}"
    text = f"Spark's read of the table returns {read['rows']} rows, {read['repeated']} of them again"
    if read["agrees"]:
        return text + ": the rows the harness read"
    return (text + f"; it differs from the harness's read: {read['only_spark']} rows only in Spark's, "
            f"{read['only_harness']} only in the harness's")
