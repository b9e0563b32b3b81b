"""KNOWN BAD: a pipeline whose output depends on where the input is split into micro-batches.

Counts of 10-second event-time windows, watermark 5 s, while one event in seven arrives 3,000 s of
event time late. Spark drops a late event only when it is behind the watermark it uses for late events
(that of two batches before), so which late events count depends on how much event time a batch
spans: a backlog read in batches of another size, or live input, gives other counts, while the same
split gives the same ones. No model: it is judged against its own fault-free runs, which read the input
in batches of different sizes. Must be refused as depending on batch boundaries (bad input, exit 2)
before any sink is judged.
"""

import json

LATE_EVERY = 7
LATE_S = 3_000
START_MS = 1_700_000_000_000


def workload(seed: int, n: int):
    """n events, one a second of event time, every LATE_EVERY-th of them LATE_S seconds late."""
    for i in range(n):
        late = LATE_S if i % LATE_EVERY == LATE_EVERY - 1 and i >= LATE_S else 0
        ts = START_MS + (i - late) * 1000
        yield f"k{i % 8}", json.dumps({"id": f"{seed}-{i}"}).encode(), ts


def transform(source):  # pyspark is imported here: the harness loads the module on the host, without Spark
    from pyspark.sql import functions as F

    events = source.select(F.col("key").cast("string").alias("k"), F.col("timestamp").alias("ts"))
    counts = events.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"), "k").count()
    value = F.to_json(F.struct(F.col("window.start").cast("long").alias("start"), "k", "count"))
    return counts.select(F.col("k").alias("key"), value.alias("value"))
