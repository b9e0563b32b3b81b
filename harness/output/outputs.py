"""The output a scenario asks for (`--output`), made for its topic or table."""

from __future__ import annotations

from harness.errors import BadInput
from harness.output.base import OUTPUTS, Output
from harness.output.delta import DeltaTable, table_path
from harness.output.delta_log import Files
from harness.output.kafka import KafkaTopic


def output_for(name: str, bootstrap: str, topic: str, files: Files, checkpoint: str) -> Output:
    """`kafka`: the output topic on `bootstrap`; `delta`: a table beside the checkpoint, read through `files`."""
    if name == "kafka":
        return KafkaTopic(bootstrap, topic)
    if name == "delta":
        return DeltaTable(files, table_path(checkpoint))
    raise BadInput(f"output '{name}': one of {', '.join(OUTPUTS)}")
