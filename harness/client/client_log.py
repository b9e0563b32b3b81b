"""librdkafka's own log lines (`%4|...|FAIL|...`) from the harness's Kafka clients: kept in the report
of the scenario that is running (kafka-clients.log), never on the console, where a broker restart the
harness caused on purpose would read like the harness's own error."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KAFKA_CLIENTS = logging.getLogger("harness.kafka_clients")
KAFKA_CLIENTS.propagate = False
KAFKA_CLIENTS.addHandler(logging.NullHandler())  # outside a scenario: dropped, not printed as a last resort


def logged(config: dict) -> dict:
    """A confluent-kafka client configuration whose log goes to the running scenario's report."""
    return {**config, "logger": KAFKA_CLIENTS}


@contextmanager
def kept_in(folder: Path) -> Iterator[None]:
    """While a scenario runs, its clients' log lines go to folder/kafka-clients.log."""
    handler = logging.FileHandler(folder / "kafka-clients.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    KAFKA_CLIENTS.addHandler(handler)
    try:
        yield
    finally:
        KAFKA_CLIENTS.removeHandler(handler)
        handler.close()
