"""The orders lake's sink: Delta Lake's streaming sink (exactly-once by its `txn` action), with the lake's
columns beside key and value, written in zstd-compressed Parquet as the lake's tables are."""

from __future__ import annotations

from orders_lake.columns import with_lake_columns

OUTPUT = "delta"  # eo-harness: the output it writes
CODEC = "spark.sql.parquet.compression.codec"


def sink(frame, context):  # type: ignore[no-untyped-def]
    codec = frame.sparkSession.conf.get(CODEC, "snappy")
    if codec != "zstd":  # the lake's readers expect zstd; a job started without the setting must not write
        raise RuntimeError(f"{CODEC} is {codec}: run with --conf {CODEC}=zstd")
    return with_lake_columns(frame).writeStream.format("delta").option("path", context.table_path)
