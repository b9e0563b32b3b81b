"""Run once while the Spark image is built, under `-XX:ArchiveClassesAtExit`: the classes that a streaming
driver and its executors load (local mode runs both in this one JVM) go into a class-data-sharing archive.
Every Spark JVM of a cluster maps them from it rather than loading and verifying them again, which is most
of a JVM's start on two cores (harness.cluster.spark.JVM_OPTIONS).

Nothing here connects anywhere: the Kafka source's DataFrame is only planned, the stream reads files.
"""

import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "t").load()
doubled = F.udf(lambda value: value * 2, "long")  # a Python worker on the executor side
with tempfile.TemporaryDirectory() as folder:
    spark.range(1000).selectExpr("id", "id % 7 AS k").write.parquet(f"{folder}/in")
    query = (spark.readStream.schema("id LONG, k LONG").parquet(f"{folder}/in")
             .select(F.col("k"), doubled("id").alias("v")).groupBy("k").agg(F.sum("v").alias("total"))
             .writeStream.outputMode("complete").trigger(availableNow=True)
             .option("checkpointLocation", f"{folder}/checkpoint")
             .foreachBatch(lambda batch, epoch: batch.write.mode("append").json(f"{folder}/out/{epoch}"))
             .start())
    query.awaitTermination()
    rows = spark.read.json(f"{folder}/out/*").count()
spark.stop()
if rows != 7:
    sys.exit(f"the archive's workload read {rows} rows back, not 7")
