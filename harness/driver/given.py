"""What the harness gives the app runner (harness/driver/spark_app.py) in its container's environment, beside
its arguments: names both sides share. Standard library only, as the driver's modules are."""

HOLD_READY_ENV = "HARNESS_HOLD_READY"  # the file where the hold at a table's commits says it watches
EVENT_LOG_ENV = "HARNESS_EVENT_LOG"  # the folder of Spark's event log, which the app makes before its session
