"""A table's rows as Spark itself reads them: a batch read in local mode, in a container of the run's Spark
image with the run's volume mounted read-only and no network, so the harness's own reader (which merges a
primary-key table's files, leaves out deleted rows) is checked against the engine's read of the same table."""

from __future__ import annotations

import base64
import json
from collections import Counter

from harness.cluster.engine import docker_client
from harness.cluster.spark import CHECKPOINTS, SOURCE

SCRIPT = """
import base64, json, sys
from pyspark.sql import SparkSession
settings = json.loads(sys.argv[1])
builder = SparkSession.builder.master("local[1]").config("spark.driver.host", "127.0.0.1") \\
    .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
for key, value in settings.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
frame = spark.read.format(sys.argv[2]).load(sys.argv[3]).selectExpr("CAST(key AS BINARY)", "CAST(value AS BINARY)")
for key, value in frame.collect():
    print("ROW " + json.dumps([None if key is None else base64.b64encode(key).decode(),
                               None if value is None else base64.b64encode(value).decode()]))
spark.stop()
"""


Row = tuple[bytes | None, bytes | None]  # (key, value)


def spark_rows(cluster, format: str, table: str, settings: dict[str, str]) -> Counter[Row]:  # type: ignore[no-untyped-def]
    """(key, value) of each row Spark reads from `table` (a path on the run's volume) with `format`."""
    output = docker_client().containers.run(
        cluster.images.spark.tag, ["python3", "-c", SCRIPT, json.dumps(settings), format, table],
        volumes={cluster.checkpoints: {"bind": CHECKPOINTS, "mode": "ro"},
                 cluster.package: {"bind": f"{SOURCE}/harness", "mode": "ro"}},
        network_mode="none", hostname="localhost", environment={"SPARK_LOCAL_IP": "127.0.0.1"},
        labels=dict(cluster.labels), remove=True, stderr=False)
    rows: Counter[Row] = Counter()
    for line in output.decode().splitlines():
        if line.startswith("ROW "):
            key, value = (None if cell is None else base64.b64decode(cell) for cell in json.loads(line[4:]))
            rows[key, value] += 1
    return rows
