"""Spark's file sink into the files output: each batch's Parquet files, committed by the batch's entry
in `_spark_metadata`; a batch the log already holds is skipped on a replay. Expected: exactly-once."""

OUTPUT = "files"  # the output it writes: run and certify it with --output files


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.format("parquet").option("path", context.table_path)
