"""The stores `--output` can name, each one package (or module) under harness.output, found by its name
here: a new store is a line in LOCATIONS. A store's package brings its reader, its containers, its
watcher and its fault classes, so it sits above the harness's other layers; it is imported when a store
is first asked for, never by the modules below it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from harness.errors import BadInput

Store = Any  # harness.output.base.Store: the output role sits above this module, which every layer asks

LOCATIONS = {  # the --output choices, the default first: name -> the module whose STORE it is
    "kafka": "harness.output.kafka",
    "delta": "harness.output.delta",
    "postgres": "harness.output.postgres",
    "iceberg": "harness.output.iceberg",
    "paimon": "harness.output.paimon",
    "hudi": "harness.output.hudi",
}
NAMES = tuple(LOCATIONS)


def store(name: str) -> Store:
    """The store `--output` names; BadInput naming the others."""
    if name not in LOCATIONS:
        raise BadInput(f"output '{name}': one of {', '.join(NAMES)}")
    return import_module(LOCATIONS[name]).STORE


def stores() -> list[Store]:
    """Every store, the default first."""
    return [store(name) for name in NAMES]


def table_stores() -> list[Store]:
    """The stores that are tables: the table commit point applies to their sinks."""
    return [found for found in stores() if found.table]


def state_tables() -> tuple[str, ...]:
    """The stores whose history tells a state table's repeats (a batch applied twice)."""
    return tuple(found.name for found in stores() if found.state_tables)
