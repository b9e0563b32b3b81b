"""Run once while the Spark image is built, under `-XX:ArchiveClassesAtExit`: the classes that a streaming
driver and its executors load (local mode runs both in this one JVM) go into a class-data-sharing archive.
Every Spark JVM of a cluster maps them from it rather than loading and verifying them again, which is most
of a JVM's start on two cores (harness.cluster.spark.JVM_OPTIONS).

Nothing here connects anywhere: the Kafka source's DataFrame is only planned, the stream reads files. So
the classes a run loads only when it talks to Kafka (its clients, Spark's Kafka source), or only in a
standalone cluster (the master, workers, executors' backends: spark-core), are loaded from their jars
whole, not run: loaded, they are archived too.
"""

import glob
import os
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

LOADED_WHOLE = ("kafka-clients", "spark-sql-kafka", "spark-token-provider-kafka", "commons-pool2", "spark-core")
THREADS = 4  # one call into the JVM a class: four at once take a quarter of the time


def class_names() -> list[str]:
    """Every class in the jars named above (not a module's or a multi-release version's)."""
    names: list[str] = []
    for jar in sorted(glob.glob(os.path.join(os.environ["SPARK_HOME"], "jars", "*.jar"))):
        if os.path.basename(jar).startswith(LOADED_WHOLE):
            with zipfile.ZipFile(jar) as archive:
                names += [entry[:-6].replace("/", ".") for entry in archive.namelist()
                          if entry.endswith(".class") and "-" not in entry]
    return names


def load(names: list[str]) -> int:
    """Load (not initialize) each class; one whose dependencies the image lacks is left out."""
    loaded = 0
    for name in names:
        try:
            jvm.java.lang.Class.forName(name, False, loader)
            loaded += 1
        except Exception:  # noqa: BLE001 - a class that cannot load is not archived, nothing more
            pass
    return loaded


spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
jvm = spark._jvm
loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
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
names = class_names()
with ThreadPoolExecutor(THREADS) as pool:
    loaded = sum(pool.map(load, [names[i::THREADS] for i in range(THREADS)]))
spark.stop()
if rows != 7:
    sys.exit(f"the archive's workload read {rows} rows back, not 7")
if loaded < len(names) * 0.9:
    sys.exit(f"only {loaded} of the {len(names)} classes of {', '.join(LOADED_WHOLE)} loaded")
print(f"class archive: the workload's classes and {loaded} of {len(names)} loaded from their jars", flush=True)
