"""KNOWN BAD: a pipeline whose output depends on where the input is split into micro-batches.

It numbers its orders with `monotonically_increasing_id()`, which is unique within one micro-batch
only: the number is made of the task's partition index and the row's place in that task, both counted
afresh in every batch. The same input read in batches of another size (a backlog with another
`maxOffsetsPerTrigger`, or live input) gives other numbers; the same split gives the same ones, so two
fault-free runs that split alike agree. No model: it is judged against its own fault-free runs, which
read the input in batches of different sizes. Must be refused as depending on batch boundaries (bad
input, exit 2) before any sink is judged.
"""

import json


def workload(seed: int, n: int):
    """n orders as (key, value bytes, timestamp_ms)."""
    for i in range(n):
        yield f"c{i % 40:03d}", json.dumps({"order": f"o{seed}-{i}", "cents": 100 + i % 997}).encode(), \
            1_700_000_000_000 + i


def transform(source):  # pyspark is imported here: the harness loads the module on the host, without Spark
    from pyspark.sql import functions as F

    orders = source.select(F.col("key").cast("string").alias("customer"),
                           F.get_json_object(F.col("value").cast("string"), "$.order").alias("order"))
    numbered = orders.withColumn("line", F.monotonically_increasing_id())  # the bug: unique per batch only
    return numbered.select(F.col("customer").alias("key"), F.to_json(F.struct("order", "line")).alias("value"))
