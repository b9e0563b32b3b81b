"""The team's Kafka sink. This example starts from the harness's reference protocol (one Kafka
transaction per micro-batch, written from the driver, with a marker that makes a replayed batch a
no-op); put your own writer in `sink` and certify it: `eo-harness certify --sink sinks/payments_sink.py:sink`.
"""

from harness.catalog.sinks import driver_transactional


def sink(frame, context):
    """Returns the stream writer the harness starts: here, the reference driver-side transactional one."""
    return driver_transactional.sink(frame, context)
