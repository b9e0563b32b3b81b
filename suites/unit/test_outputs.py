"""The output role's stores, found by name: each loads and says what it needs, a Spark line it cannot run
on is refused before a cluster starts, and every catalog sink writes an output there is."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.catalog import sinks
from harness.errors import BadInput
from harness.output.registry import LOCATIONS, NAMES, store, stores
from harness.run.session import checked_output
from harness.subject.code_spec import resolve_sink
from harness.versions import SPARK_VERSIONS, Stack

pytestmark = pytest.mark.unit
SPARK_4, SPARK_3 = (Stack("4.1.1", spark) for spark in SPARK_VERSIONS)


def test_every_store_loads_under_its_own_name_and_the_default_is_kafka() -> None:
    assert NAMES[0] == "kafka" and [found.name for found in stores()] == list(LOCATIONS)
    with pytest.raises(BadInput, match="output 'nope': one of kafka, delta"):
        store("nope")


@pytest.mark.parametrize("name", NAMES)
def test_a_store_names_its_jars_for_the_lines_it_runs_on_and_none_for_the_others(name: str) -> None:
    found = store(name)
    for stack in (SPARK_4, SPARK_3):
        if found.unsupported(stack):
            assert found.jars(stack) == () and found.versions(stack) == {}
        else:
            assert all(jar.split("!")[0].count(":") == 2 and all(e.count(":") == 1 for e in jar.split("!")[1:])
                       for jar in found.jars(stack))


def test_an_output_the_spark_line_cannot_run_is_bad_input_before_a_cluster_starts() -> None:
    with pytest.raises(BadInput, match="output paimon: Spark 4.0.0: .*--spark 3.5"):
        checked_output(resolve_sink("paimon_streaming"), "paimon", SPARK_4)
    assert checked_output(resolve_sink("paimon_streaming"), "paimon", SPARK_3) == "paimon"


def test_a_sink_declaring_another_output_is_bad_input_naming_the_one_to_write() -> None:
    with pytest.raises(BadInput, match="writes the paimon output .*--output paimon"):
        checked_output(resolve_sink("paimon_streaming"), "delta", SPARK_3)


def test_every_catalog_sink_writes_an_output_there_is() -> None:
    declared = {path.stem: resolve_sink(path.stem).output for path in Path(sinks.__file__).parent.glob("*.py")
                if path.stem != "__init__"}
    assert {output for output in declared.values() if output} <= set(NAMES), declared
