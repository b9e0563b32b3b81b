"""The stores `--output` can name, found through the `eo_harness.outputs` entry-point group, as pytest finds
its plugins: the harness registers its own there (pyproject.toml) the way a team's package registers a store
of its own, and nothing in the harness names one. A store's package brings its reader, its containers, its
watcher and its fault classes, so it sits above the harness's other layers; it is loaded when first asked
for, never imported by the modules below it."""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from harness.errors import BadInput

Store = Any  # harness.output.base.Store: the output role sits above this module, which every layer asks

GROUP = "eo_harness.outputs"  # an entry point's name is the --output choice, its object the store
HARNESS = "eo-harness"  # the harness's own distribution: its stores come first
DEFAULT = "kafka"  # the --output a run writes to unless told: the topic, as the harness began


def ordered(found: list[EntryPoint]) -> dict[str, EntryPoint]:
    """The stores by name: the default first, the harness's own next, then those of other packages, each by
    name (an installer keeps no order of its own). A name two packages both declare is refused, naming both."""
    def rank(point: EntryPoint) -> tuple[bool, bool, str]:
        return point.name != DEFAULT, point.dist is None or point.dist.name != HARNESS, point.name

    named: dict[str, EntryPoint] = {}
    for point in sorted(found, key=rank):
        if point.name in named and named[point.name].value != point.value:
            raise BadInput(f"output '{point.name}' is declared twice in entry-point group {GROUP}: by "
                           f"{named[point.name].value} and by {point.value} (uninstall one of their packages)")
        named.setdefault(point.name, point)
    return named


@cache
def installed() -> dict[str, EntryPoint]:
    """The stores of every installed package, read once."""
    found = ordered(list(entry_points(group=GROUP)))
    if not found:  # the harness's own are declared by its installed metadata, not by its source
        raise RuntimeError(f"no store in entry-point group {GROUP}: the harness is not installed "
                           "(`pip install -e .` in its repository, or `bash run.sh setup`)")
    return found


NAMES = tuple(installed())


def store(name: str) -> Store:
    """The store `--output` names; BadInput naming the others, or what is wrong with its package."""
    point = installed().get(name)
    if point is None:
        raise BadInput(f"output '{name}': one of {', '.join(NAMES)} (stores installed in entry-point group {GROUP})")
    return _loaded(point)


@cache
def _loaded(point: EntryPoint) -> Store:
    try:
        found = point.load()
    except Exception as error:  # noqa: BLE001 - a third party's package may raise anything on import
        raise BadInput(f"output '{point.name}': its entry point {point.value} does not load "
                       f"({type(error).__name__}: {error})") from error
    if getattr(found, "name", None) != point.name:
        raise BadInput(f"output '{point.name}': its entry point {point.value} is no store of that name "
                       f"(its name is {getattr(found, 'name', None)!r})")
    return found


def package(name: str) -> str:
    """The installed distribution that declares the store `name` (reports and the outputs page say it)."""
    point = installed()[name]
    return point.dist.name if point.dist is not None else "?"


def stores() -> list[Store]:
    """Every store, the default first."""
    return [store(name) for name in NAMES]


def table_stores() -> list[Store]:
    """The stores that are tables: the table commit point applies to their sinks."""
    return [found for found in stores() if found.table]


def state_tables() -> tuple[str, ...]:
    """The stores whose history tells a state table's repeats (a batch applied twice)."""
    return tuple(found.name for found in stores() if found.state_tables)
