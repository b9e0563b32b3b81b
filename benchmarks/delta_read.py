"""How the harness reads a Delta table's committed snapshot, against the two other ways there are: the
`deltalake` package (delta-rs) and a Spark batch read in a container. Why harness.output.delta reads the
log itself with pyarrow.

    python benchmarks/delta_read.py [--records 1000000] [--versions 5] [--repeats 3]

Spark's own Delta writer (the project's Spark image, local mode) writes `records` rows of a key and a JSON
value, in `versions` appends, each with a `txnAppId`/`txnVersion` as a sink's batch, into a temporary
folder. Then, each the median of `repeats`, taking turns:

- the harness's read (harness.output.delta.DeltaTable over the folder, the checker given nothing to do):
  the log parsed, the snapshot's Parquet files decoded by pyarrow into the records the checkers take;
- `deltalake` (when installed: `pip install deltalake`): the snapshot as an Arrow table, its cells made
  the same bytes;
- a Spark batch read (`spark.read.format("delta")`, every row collected into the Python driver), in a
  container of the Spark image, its time from `docker run` to its exit (a JVM and a session to start)
  and the read alone, as its script measures it.

Also the history each gives: the harness needs every version's `txn` action (the batch a sink's
`txnAppId`/`txnVersion` commit carries) to name a batch committed twice. The table goes to
docs/benchmarks/delta_read.md, dated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable

import docker
from docs_page import record, section
from table_check import LocalFiles

from harness.client.reader import ReadResult
from harness.cluster.images import current
from harness.interrupt import run_script
from harness.output.delta.table import DeltaTable
from harness.output.rows import COLUMNS, cells_as_bytes

APP_ID = "delta-read-benchmark"  # each version's txnAppId
SPARK = """
import json, sys, time
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[2]")
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .getOrCreate())
action, path, records, versions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if action == "write":
    each = -(-records // versions)
    for version in range(versions):
        rows = spark.range(version * each, min(records, (version + 1) * each), numPartitions=4)
        rows = rows.select(F.format_string("k%04d", F.col("id") % 100).alias("key"),
                           F.to_json(F.struct(F.format_string("3-%09d", "id").alias("id"),
                                              (F.col("id") % 100).alias("seq"))).alias("value"))
        (rows.write.format("delta").mode("append").option("txnAppId", sys.argv[5]).option("txnVersion", version)
         .save(path))
else:
    started = time.perf_counter()
    rows = spark.read.format("delta").load(path).select("key", "value").collect()
    print(json.dumps({"rows": len(rows), "read_s": time.perf_counter() - started}))
"""


def spark(folder: str, *args: str) -> tuple[str, float]:
    """The script's last line of output and the seconds from starting its container to its exit."""
    image = current().spark.tag
    client = docker.from_env()
    client.images.get(image)  # the image must be there: `eo-harness images build`
    started = time.perf_counter()
    try:
        out = client.containers.run(image, ["-c", SPARK, *args], entrypoint="python3", remove=True,
                                    network_mode="none", volumes={folder: {"bind": "/work", "mode": "rw"}},
                                    environment={"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "localhost"},
                                    stdout=True, stderr=False)
    except docker.errors.ContainerError as error:
        said = (error.stderr or b"")[-3000:].decode(errors="replace")
        raise SystemExit(f"the Spark container failed ({error.exit_status}):\n{said}") from None
    return out.decode().strip().splitlines()[-1], time.perf_counter() - started


def harness_read(path: str) -> int:
    table = DeltaTable(LocalFiles(), path)
    read: ReadResult = table.read(on_batch=lambda batch: None)
    return len(read.records)


def deltalake_read(path: str) -> int:
    from deltalake import DeltaTable as RustTable

    arrow = RustTable(path).to_pyarrow_table(columns=list(COLUMNS))
    rows = 0
    for batch in arrow.to_batches(max_chunksize=10_000):
        _, values = (cells_as_bytes(batch.column(c)) for c in COLUMNS)
        rows += len(values)
    return rows


def deltalake_txns(path: str) -> int:
    """Versions whose delta-rs history names the batch their `txn` action carries (the app id written)."""
    from deltalake import DeltaTable as RustTable

    return sum(APP_ID in json.dumps(commit) for commit in RustTable(path).history())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    try:
        import deltalake  # noqa: F401 - optional: the row is left out without it
        reads: dict[str, Callable[[str], int]] = {"harness (log + pyarrow)": harness_read,
                                                  "deltalake (delta-rs)": deltalake_read}
    except ImportError:
        reads = {"harness (log + pyarrow)": harness_read}
        print("deltalake is not installed (pip install deltalake): its row is left out")
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)  # the container's user writes the table
        print(f"writing {args.records:,} rows in {args.versions} versions with Spark's Delta writer")
        spark(folder, "write", "/work/table", str(args.records), str(args.versions), APP_ID)
        path = f"{folder}/table"
        taken: dict[str, list[float]] = {name: [] for name in [*reads, "Spark batch read (container)"]}
        inside: list[float] = []
        for turn in range(args.repeats):
            for name, read in reads.items():
                started = time.perf_counter()
                assert read(path) == args.records, name
                taken[name].append(time.perf_counter() - started)
            out, seconds = spark(folder, "read", "/work/table", str(args.records), str(args.versions), APP_ID)
            measured = json.loads(out)
            assert measured["rows"] == args.records
            taken["Spark batch read (container)"].append(seconds)
            inside.append(measured["read_s"])
            print(f"turn {turn + 1}: " + ", ".join(f"{n} {s[-1]:.2f} s" for n, s in taken.items()), flush=True)
        txns = deltalake_txns(path) if "deltalake (delta-rs)" in reads else None
        ours = sum(c.app_id == APP_ID for c in DeltaTable(LocalFiles(), path).commits())
    medians = {name: statistics.median(samples) for name, samples in taken.items()}
    rows = [[name, f"{seconds:.2f}", f"{args.records / seconds:,.0f}"] for name, seconds in medians.items()]
    rows[-1][0] += f" (the read alone, inside: {statistics.median(inside):.2f} s)"
    notes = (f"Median of {args.repeats}, wall seconds, taking turns; {args.versions} versions written by Spark's "
             "Delta writer (local mode, 4 partitions). The harness's and delta-rs's rows end as the same bytes "
             "(the checkers' records); Spark's as Rows collected into its Python driver, its time from `docker "
             "run` to exit. Versions whose delta-rs history names their `txn` action's app id: "
             + ("not measured (deltalake not installed)" if txns is None else f"{txns} of {args.versions}")
             + f" (its `transaction_version` gives an app id's latest version only); the harness's log parser: "
             f"{ours} of {args.versions} (each version's `txn`, which names a batch committed twice).")
    for row in rows:
        print(" | ".join(row))
    print(notes)
    command = f"python benchmarks/delta_read.py --records {args.records} --versions {args.versions}"
    record("delta_read", "Reading a Delta table", "How the harness reads a Delta table's committed snapshot "
           "(its log parsed, the files it names decoded by pyarrow) against `deltalake` (delta-rs) and a Spark "
           "batch read in a container (`benchmarks/delta_read.py`).",
           section(command, ["read", "seconds", "rows/s"], rows, notes))


if __name__ == "__main__":
    run_script(main)
