"""A fault-injection harness that proves or refutes end-to-end exactly-once for Spark + Kafka pipelines."""

__version__ = "0.1.0"
