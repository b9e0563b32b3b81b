"""The Spark application the driver container runs: Kafka source, the named pipeline, Spark's Kafka sink.

Runs inside the driver with only pyspark and the repository on its path; the harness passes every
setting on the command line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time

from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import DataStreamWriter

from harness.driver.given import EVENT_LOG_ENV, HOLD_READY_ENV
from harness.driver.sink import SinkContext
from harness.driver.state_stores import DEFAULT_STATE_STORE, STATE_STORES

# Speculative copies of slow tasks, as users turn it on against stragglers: once half of a stage's tasks
# are done, a task running half again as long as they did runs a second time elsewhere, and both
# attempts may write (half, not Spark's three quarters: a stage here has four tasks on two cores).
SPECULATION = {"spark.speculation": "true", "spark.speculation.interval": "200ms",
               "spark.speculation.multiplier": "1.5", "spark.speculation.quantile": "0.5"}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pipeline", required=True, help="dotted module with transform(source) -> DataFrame")
    parser.add_argument("--pipeline-file", help="a pipeline file or zipped package, shipped with addPyFile")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input-topic", required=True)
    parser.add_argument("--output-topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--trigger-seconds", type=float, default=1.0)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=0)
    parser.add_argument("--sink", required=True, help="module:attribute of the sink function")
    parser.add_argument("--sink-file", help="a sink file or zipped package, shipped with addPyFile")
    parser.add_argument("--sink-id", required=True)
    parser.add_argument("--marker-topic", required=True)
    parser.add_argument("--state-store", choices=sorted(STATE_STORES), default=DEFAULT_STATE_STORE)
    parser.add_argument("--speculation", action="store_true", help="run a copy of a slow task elsewhere")
    parser.add_argument("--output", default="kafka", help="where the sink writes (harness.output.registry)")
    parser.add_argument("--context", default="{}", help="the output's fields of the sink's context, as JSON")
    parser.add_argument("--spark-conf", default="{}", help="the output's session settings, as JSON")
    return parser.parse_args()


HOLD_READY_S = 60.0  # the hold is started as the container starts: it says it watches well within this


def await_hold() -> None:
    """Wait for the harness's hold at the table's commits (harness.driver.table_hold, which the harness starts
    beside this driver as root, and which says it watches in a file only root can write), where it holds."""
    ready = os.environ.get(HOLD_READY_ENV)
    if not ready:
        return
    deadline = time.monotonic() + HOLD_READY_S
    while not os.path.exists(ready):
        if time.monotonic() > deadline:
            print(f"HARNESS-HOLD-ERROR the harness's hold at the table's commits did not start within "
                  f"{HOLD_READY_S:g} s", flush=True)
            raise SystemExit(3)
        time.sleep(0.05)
    with open(ready) as file:
        said = file.read(500)
    if said != "ok":
        print(f"HARNESS-HOLD-ERROR the table's commits cannot be held: {said}", flush=True)
        raise SystemExit(3)


def import_shipped(spark: SparkSession, module: str, shipped: str | None):  # type: ignore[no-untyped-def]
    """Import a module; code shipped from outside the harness (a file, or a package zipped) goes to the
    executors too."""
    if shipped:
        sys.path.insert(0, shipped if shipped.endswith(".zip") else os.path.dirname(shipped))
        spark.sparkContext.addPyFile(shipped)
    return importlib.import_module(module)


def build_writer(spark: SparkSession, args: argparse.Namespace, output, context: SinkContext) -> DataStreamWriter:  # type: ignore[no-untyped-def]
    """Import the sink and call it; a failure ends the app with one HARNESS-SINK-ERROR line."""
    try:
        module, _, attribute = args.sink.partition(":")
        writer = getattr(import_shipped(spark, module, args.sink_file), attribute)(output, context)
    except Exception as error:  # noqa: BLE001 - reported to the harness, which names the sink
        print(f"HARNESS-SINK-ERROR {error.__class__.__name__}: {error}", flush=True)
        raise SystemExit(2) from None
    if not isinstance(writer, DataStreamWriter):
        print(f"HARNESS-SINK-ERROR returned {type(writer).__name__}, not a DataStreamWriter", flush=True)
        raise SystemExit(2)
    return writer


def main() -> None:
    args = arguments()
    await_hold()  # before any of the user's code runs, and before the query starts (a restarted query's first
    # commit may be a replay's)
    if os.environ.get(EVENT_LOG_ENV):  # Spark's event log goes there, and Spark writes only into a folder that exists
        os.makedirs(os.environ[EVENT_LOG_ENV], exist_ok=True)
    builder = SparkSession.builder.appName(f"harness:{args.pipeline}")
    static = {**(SPECULATION if args.speculation else {}), **json.loads(args.spark_conf)}
    for key, value in static.items():  # read when the context starts
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    print(f"HARNESS-SESSION-READY t={time.time():.3f}", flush=True)  # the driver's start in parts (harness.run.phases)
    pipeline = import_shipped(spark, args.pipeline, args.pipeline_file)
    for key, value in STATE_STORES[args.state_store].items():
        spark.conf.set(key, value)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.input_topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
    )
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", args.max_offsets_per_trigger)
    try:
        output = pipeline.transform(reader.load())
    except Exception as error:  # noqa: BLE001 - reported to the harness, which names the pipeline
        print(f"HARNESS-PIPELINE-ERROR transform raised {error.__class__.__name__}: {error}", flush=True)
        raise SystemExit(2) from None
    context = SinkContext(args.bootstrap, args.output_topic, args.sink_id, args.checkpoint, args.marker_topic,
                          args.output, **json.loads(args.context))
    writer = build_writer(spark, args, output, context)
    if getattr(pipeline, "OUTPUT_MODE", None):  # an aggregation without a watermark needs update or complete
        writer = writer.outputMode(pipeline.OUTPUT_MODE)
    try:
        query = (
            writer.option("checkpointLocation", args.checkpoint)
            .trigger(processingTime=f"{args.trigger_seconds} seconds")
            .start()
        )
    except AnalysisException as error:  # a plan Spark refuses to stream: the pipeline's, or its sink's
        print(f"HARNESS-QUERY-ERROR the query cannot start: {str(error).splitlines()[0]}", flush=True)
        raise SystemExit(2) from None
    print(f"HARNESS-QUERY-STARTED id={query.id}", flush=True)
    try:
        query.awaitTermination()
    except StreamingQueryException as error:  # the query failed on its own: said in one line, for the supervisor
        progress = query.lastProgress or {}
        print("HARNESS-QUERY-FAILED " + json.dumps({"message": str(error), "last_batch": progress.get("batchId")}),
              flush=True)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
