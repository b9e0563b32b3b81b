"""The columns the lake keeps beside each order: an Avro copy of the record for the warehouse's loaders
(Spark's `to_avro`, from the spark-avro jar) and the audit line (orders_lake.audit, on the executors)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro
from pyspark.sql.types import StringType

from orders_lake.audit import audit


def with_lake_columns(frame: DataFrame) -> DataFrame:
    """The frame with `avro` (key and value as an Avro record) and `audit` beside its key and value."""
    record: Column = F.struct(F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"))
    audit_udf = F.udf(audit, StringType())
    return frame.withColumn("avro", to_avro(record)).withColumn("audit", audit_udf("key", "value"))
