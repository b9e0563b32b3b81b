"""Reproduce, without the harness, how Spark's Iceberg streaming sink lets a replayed epoch overwrite a committed
data file (docs/findings/iceberg-streaming-replay-overwrites-a-committed-file.md).

It drives the sink's own code through Spark's DataSource V2 API, as Spark's micro-batch execution does: Iceberg's
SparkWrite gives a StreamingWrite, whose writer factory makes one task's writer for (partition id, task id,
epoch id). The first attempt writes rows A for epoch 0 and commits them. The replay (a new driver: same query id
from the checkpoint, same epoch, task ids counting from 0 again, so the same task id) writes rows B with a new
SparkWrite under the same partition id, task id, query id and epoch; its commit is skipped because the epoch is
already in the table, but its data file has already been written. Then Spark reads the table.

Run it with any Spark whose class path has Iceberg's Spark runtime jar, for example:

    docker run --rm --network none --hostname localhost -v "$PWD":/work:ro <spark-image> python3 /work/reproduce.py

Exit 1: the replay wrote the committed file's path again (the bug). Exit 0: the paths differ.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid

from pyspark.sql import SparkSession

PARTITION_ID, TASK_ID, EPOCH = 2, 3, 0
ROWS_A = [(i, f"first attempt {i}") for i in range(1, 4)]
ROWS_B = [(i, f"replay {i}") for i in range(101, 106)]

spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.catalog.local", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.local.type", "hadoop")
    .config("spark.sql.catalog.local.warehouse", tempfile.mkdtemp(prefix="iceberg-replay-"))
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
jvm = spark.sparkContext._jvm
gateway = spark.sparkContext._gateway
spark.sql("CREATE TABLE local.db.events (id INT, data STRING) USING iceberg")
query_id = str(uuid.uuid4())  # a streaming query's id: kept in its checkpoint, the same after a restart


def java_array(cls, items):
    array = gateway.new_array(cls, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def streaming_write():
    """What a driver's micro-batch gets from the sink: Iceberg's SparkWrite as a StreamingWrite, for this query."""
    namespace = java_array(jvm.String, ["db"])
    table = spark._jsparkSession.sessionState().catalogManager().catalog("local").loadTable(
        jvm.org.apache.spark.sql.connector.catalog.Identifier.of(namespace, "events"))
    options = jvm.org.apache.spark.sql.util.CaseInsensitiveStringMap(jvm.java.util.HashMap())
    info_class = jvm.java.lang.Class.forName("org.apache.spark.sql.connector.write.LogicalWriteInfoImpl")
    constructor = info_class.getConstructors()[0]  # (queryId, schema, options), Spark 4 adds two Optionals
    extra = constructor.getParameterCount() - 3
    args = [query_id, table.schema(), options] + [jvm.java.util.Optional.empty()] * extra
    info = constructor.newInstance(java_array(jvm.Object, args))
    return table, table.newWriteBuilder(info).build().toStreaming()


def run_task(write, rows):
    """One task of epoch EPOCH: the writer factory's writer for (PARTITION_ID, TASK_ID, EPOCH) writes rows."""
    factory = write.createStreamingWriterFactory(jvm.org.apache.spark.sql.connector.write.PhysicalWriteInfoImpl(4))
    writer = factory.createWriter(PARTITION_ID, TASK_ID, EPOCH)
    for key, text in rows:
        values = java_array(jvm.Object, [key, jvm.org.apache.spark.unsafe.types.UTF8String.fromString(text)])
        writer.write(jvm.org.apache.spark.sql.catalyst.expressions.GenericInternalRow(values))
    message = writer.commit()
    writer.close()
    files = message.getClass().getDeclaredMethod("files", gateway.new_array(jvm.Class, 0))
    files.setAccessible(True)  # SparkWrite.TaskCommit.files() is package-private
    data_files = files.invoke(message, gateway.new_array(jvm.Object, 0))
    return message, [data_files[i].location() for i in range(len(data_files))]


def named_by_output_file_factory(table):
    """The name Iceberg's OutputFileFactory gives this task's first file, built as SparkWrite's WriterFactory does."""
    factory = (jvm.org.apache.iceberg.io.OutputFileFactory.builderFor(table.table(), PARTITION_ID, TASK_ID)
               .format(jvm.org.apache.iceberg.FileFormat.PARQUET).operationId(f"{query_id}-{EPOCH}").build())
    return factory.newOutputFile().encryptingOutputFile().location()


def describe_table():
    """The current snapshot's data files as its manifests record them, next to what is on disk now."""
    snapshots = spark.sql("SELECT * FROM local.db.events.snapshots").count()
    files = spark.sql("SELECT file_path, record_count, file_size_in_bytes FROM local.db.events.files").collect()
    for row in files:
        print(f"  {snapshots} snapshot(s); data file {os.path.basename(row.file_path)}: the manifest records "
              f"{row.record_count} rows, {row.file_size_in_bytes} bytes; the file now has "
              f"{os.path.getsize(row.file_path)} bytes")


# The first attempt: the task writes rows A, the driver commits epoch 0.
table, write = streaming_write()
message, first_paths = run_task(write, ROWS_A)
write.commit(EPOCH, java_array(jvm.org.apache.spark.sql.connector.write.WriterCommitMessage, [message]))
print(f"first attempt: wrote {len(ROWS_A)} rows to {[os.path.basename(p) for p in first_paths]}, "
      f"committed epoch {EPOCH}")
print(f"  OutputFileFactory names the task's file {os.path.basename(named_by_output_file_factory(table))}")
describe_table()

# The replay: a new driver runs epoch 0 again; same query id, same epoch, same partition id and task id.
table, write = streaming_write()
message, replay_paths = run_task(write, ROWS_B)
print(f"replay: wrote {len(ROWS_B)} other rows to {[os.path.basename(p) for p in replay_paths]}")
print(f"  OutputFileFactory names the task's file {os.path.basename(named_by_output_file_factory(table))}")
snapshots = spark.sql("SELECT * FROM local.db.events.snapshots").count()
write.commit(EPOCH, java_array(jvm.org.apache.spark.sql.connector.write.WriterCommitMessage, [message]))
added = spark.sql("SELECT * FROM local.db.events.snapshots").count() - snapshots
print(f"  the driver commits epoch {EPOCH} again: " + (f"{added} snapshot(s) added" if added else
      "the sink skips it, the epoch is already in the table (no new snapshot)"))
describe_table()

spark.catalog.clearCache()
try:
    read = sorted(tuple(row) for row in spark.table("local.db.events").collect())
    print(f"a reader of the table gets: {read}")
    if read == sorted(ROWS_A):
        print("  these are the first attempt's committed rows")
    elif read == sorted(ROWS_B):
        print("  these are the replay's rows, which were never committed; the committed rows are gone")
except Exception as error:  # whatever the read raises is the answer to print
    print(f"a reader of the table fails: {str(error).strip().splitlines()[0]}")

same = sorted(set(first_paths) & set(replay_paths))
spark.stop()
if same:
    print(f"the same path twice: {same[0]}")
    print("verdict: bug present, the replay overwrote a data file of the committed snapshot")
    sys.exit(1)
print("verdict: the replay's data file has another path; the committed file is intact")
sys.exit(0)
