"""An executor is found by parentage: a child of the worker's JVM (the init's first child) that runs Spark's
executor backend; a process the sink names as one, orphaned to the init or left under a Python worker, is
never it."""

from __future__ import annotations

import pytest

from harness.faults.processes import EXECUTOR_CLASS, executors

pytestmark = pytest.mark.unit
WORKER = "java -cp /opt/jars/* -Xmx256m org.apache.spark.deploy.worker.Worker --host spark-worker-1"
EXECUTOR = f"java -cp /opt/jars/* -Xmx512M {EXECUTOR_CLASS} --driver-url spark://x --executor-id 3"


def table(*rows: tuple[int, int, str]) -> str:
    return "\n".join(f"{pid:>6} {ppid:>6} {args}" for pid, ppid, args in rows)


def test_the_worker_s_child_running_the_backend_is_the_executor() -> None:
    listing = table((1, 0, "/sbin/docker-init -- spark-class"), (7, 1, WORKER), (40, 7, EXECUTOR),
                    (90, 40, "python3 -m pyspark.daemon"), (95, 90, "python3 -m pyspark.daemon"))
    assert executors(listing) == [40]


def test_decoys_named_as_executors_are_never_the_executor() -> None:
    decoy = f"java -c import time; time.sleep(600) {EXECUTOR_CLASS} --executor-id 0"
    listing = table((1, 0, "/sbin/docker-init -- spark-class"), (7, 1, WORKER), (12, 1, decoy),
                    (13, 1, f"{WORKER} {EXECUTOR_CLASS}"), (95, 90, decoy), (120, 7, EXECUTOR))
    assert executors(listing) == [120]  # lower pids, the init's children or a Python worker's: decoys


def test_a_worker_without_executors_and_a_listing_of_nothing() -> None:
    assert executors(table((1, 0, "/sbin/docker-init -- spark-class"), (7, 1, WORKER))) == []
    assert executors("") == []
    assert executors(table((7, 1, WORKER), (8, 7, f"{EXECUTOR_CLASS}x --executor-id 1"))) == []  # not the class
