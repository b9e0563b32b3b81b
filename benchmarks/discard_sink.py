"""A sink that discards its input (Spark's `noop` format): the same query with no output, so that
benchmarks/overhead.py can tell the sink's time from Spark's and the harness's. Every record is `lost`."""


def sink(frame, context):  # type: ignore[no-untyped-def]
    return frame.writeStream.format("noop")
