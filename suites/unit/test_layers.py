"""The package's layers, read from its imports (module-level and deferred alike, with `ast`): each
layer imports only itself and the layers below it, no two modules import each other even through
others, and the code that runs inside the Spark containers needs nothing but the standard library,
pyspark and itself."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
PACKAGE = Path(__file__).resolve().parents[2] / "harness"

# Lowest first. A module belongs to the first entry whose prefix names it or its package.
# the output role itself (harness.output.base, a store's defaults), and where tables may live
# (harness.output.object_store's pins); every other module under harness.output is a store's
OUTPUT_ROLE = ("harness.output", "harness.output.base", "harness.output.store_defaults", "harness.output.commits",
               "harness.output.rows", "harness.output.parquet_pages", "harness.output.orc_child",
               "harness.output.registry", "harness.output.object_store")
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("driver", ("harness.driver", "harness.images")),  # inside the Spark containers (and their images' builds)
    ("base", ("harness", "harness.errors", "harness.versions", "harness.history", "harness.progress",
              "harness.interrupt", "harness.settings", "harness.quiet", "harness.evidence",
              "harness.output.registry")),  # stores found by name: imported when asked for, above `run`
    ("gate", ("harness.gate",)),
    ("client", ("harness.client",)),
    ("output", ("harness.output",)),  # where a sink writes: a topic (the client's reader) or a table
    ("cluster", ("harness.cluster",)),
    ("faults", ("harness.faults",)),
    ("checker", ("harness.checker",)),
    ("subject", ("harness.subject", "harness.catalog")),
    ("report", ("harness.report",)),
    ("run", ("harness.run",)),
    ("stores", ()),  # each store's package under harness.output (OUTPUT_ROLE aside): reader, containers, watcher
    ("certify", ("harness.certify",)),
    ("explore", ("harness.explore",)),  # searches past the certificate, with its rows
    ("front ends", ("harness.cli", "harness.plugin", "harness.plugin_properties", "harness.plugin_clusters",
                    "harness.sink_matrix", "harness.__main__", "harness.reference_docs")),
]
# Code that runs inside the engines' containers: only its own kind of module besides stdlib, pyspark and pyflink.
IN_CONTAINERS = {"harness.driver": ("harness.driver",), "harness.images": (),
                 "harness.catalog.sinks": ("harness.catalog.sinks", "harness.driver"),
                 "harness.catalog.jobs": ("harness.catalog.jobs", "harness.driver")}
# ruamel: PyFlink's own dependency, which the Flink image's config step uses
CONTAINER_LIBRARIES = {"pyspark", "pyflink", "ruamel", "confluent_kafka", "py4j", "psycopg"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


MODULES = modules()


def imported(name: str) -> set[str]:
    """Every module `name` imports anywhere in its body (deferred imports too), as full names."""
    path = MODULES[name]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def harness_module(target: str) -> str | None:
    """The package module an import names (`harness.x.y.Name` -> `harness.x.y`), None outside the package."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def layer(name: str) -> int:
    if name.startswith("harness.output.") and name not in OUTPUT_ROLE:
        return next(index for index, (what, _) in enumerate(LAYERS) if what == "stores")
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes if prefix != "harness"):
            return index
        if name == "harness" and "harness" in prefixes:
            return index
    raise AssertionError(f"{name} is in no layer: add it to LAYERS")


EDGES = {name: {t for t in map(harness_module, imported(name)) if t and t != name and not name.startswith(t + ".")}
         for name in MODULES}


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer(name)


def test_no_module_imports_from_a_higher_layer() -> None:
    wrong = [f"{name} ({LAYERS[layer(name)][0]}) imports {target} ({LAYERS[layer(target)][0]})"
             for name, targets in EDGES.items() for target in targets if layer(target) > layer(name)]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycle() -> None:
    def reaches(start: str) -> set[str]:
        seen, stack = set(), [start]
        while stack:
            for target in EDGES[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    cycles = sorted(name for name in MODULES if name in reaches(name))
    assert not cycles, f"modules on an import cycle: {cycles}"


@pytest.mark.parametrize("package, allowed", sorted(IN_CONTAINERS.items()))
def test_code_in_the_containers_needs_only_the_standard_library_pyspark_and_itself(
        package: str, allowed: tuple[str, ...]) -> None:
    for name in [m for m in MODULES if m == package or m.startswith(package + ".")]:
        for target in imported(name):
            top = target.split(".")[0]
            if top == "harness":
                assert any(target == a or target.startswith(a + ".") for a in allowed), f"{name} imports {target}"
            else:
                assert top in sys.stdlib_module_names or top in CONTAINER_LIBRARIES or top == "__future__", \
                    f"{name} imports {target}"


def test_the_checker_finds_a_cycle_and_an_upward_import() -> None:
    """The rules above can fail: a made-up pair of modules importing each other upward is caught."""
    EDGES["harness.errors"].add("harness.run.scenario")
    try:
        with pytest.raises(AssertionError, match="harness.errors"):
            test_no_module_imports_from_a_higher_layer()
        with pytest.raises(AssertionError, match="harness.errors"):
            test_no_import_cycle()
    finally:
        EDGES["harness.errors"].discard("harness.run.scenario")
