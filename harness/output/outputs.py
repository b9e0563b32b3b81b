"""The output a scenario asks for (`--output`), made for its topic or table."""

from __future__ import annotations

from collections.abc import Callable

from harness.errors import BadInput
from harness.output.base import OUTPUTS, Output
from harness.output.commits import Files
from harness.output.delta.table import DeltaTable, table_path
from harness.output.kafka import KafkaTopic
from harness.output.postgres.table import Endpoint, PostgresTable, table_name

STATE_TABLES = ("delta", "postgres")  # the outputs whose history tells a state table's repeats


def output_for(name: str, bootstrap: str, topic: str, files: Files, checkpoint: str, scenario: str = "",
               postgres: Callable[[], tuple[Endpoint, Endpoint]] | None = None, state: bool = False) -> Output:
    """`kafka`: the output topic on `bootstrap`; `delta`: a table beside the checkpoint, read through `files`;
    `postgres`: a table named for the scenario on the server `postgres()` starts (the harness's endpoint
    and the sinks'), keyed and with a change log when the sink keeps a state table (`state`)."""
    if name == "kafka":
        return KafkaTopic(bootstrap, topic)
    if name == "delta":
        return DeltaTable(files, table_path(checkpoint))
    if name == "postgres" and postgres is not None:
        return PostgresTable(*postgres(), table_name(scenario), state)
    raise BadInput(f"output '{name}': one of {', '.join(OUTPUTS)}")
