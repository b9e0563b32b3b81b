"""The output role's stores, found by name: each loads and says what it needs, a Spark line it cannot run
on is refused before a cluster starts, and every catalog sink writes an output there is."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from harness.catalog import sinks
from harness.errors import BadInput
from harness.output import object_store, registry
from harness.output.delta import artifact
from harness.output.registry import NAMES, store, stores
from harness.run.session import checked_output, checked_store
from harness.settings import SETTINGS
from harness.subject.code_spec import resolve_sink
from harness.versions import ICEBERG_VERSIONS, SPARK_VERSIONS, Stack

pytestmark = pytest.mark.unit
STACKS = tuple(Stack("4.1.1", spark) for spark in SPARK_VERSIONS)
SPARK_4, SPARK_3 = STACKS[0], STACKS[-1]  # the default, and the 3.5 line (Scala 2.12)


def test_every_store_loads_under_its_own_name_and_the_default_is_kafka() -> None:
    assert NAMES[0] == "kafka" and [found.name for found in stores()] == list(NAMES)
    assert {"kafka", "delta", "postgres", "iceberg", "paimon", "hudi"} <= set(NAMES)
    with pytest.raises(BadInput, match="output 'nope': one of kafka, delta"):
        store("nope")


@pytest.mark.parametrize("name", NAMES)
def test_a_store_names_its_jars_for_the_lines_it_runs_on_and_none_for_the_others(name: str) -> None:
    found = store(name)
    for stack in STACKS:
        if found.unsupported(stack):
            assert found.jars(stack) == () and found.versions(stack) == {}
        else:
            assert all(jar.split("!")[0].count(":") == 2 and all(e.count(":") == 1 for e in jar.split("!")[1:])
                       for jar in found.jars(stack))


def test_every_spark_4_line_runs_the_delta_and_iceberg_outputs_on_the_volume_and_on_s3() -> None:
    for stack in (s for s in STACKS if s.spark.startswith("4.")):
        for release in ICEBERG_VERSIONS[stack.line]:
            asked = Stack(stack.kafka, stack.spark, release)
            assert not store("delta").unsupported(asked) and not store("iceberg").unsupported(asked), asked
            assert store("delta").unsupported_on(asked, "s3") is None and object_store.s3a_jars(asked), asked


def test_iceberg_lives_on_s3_on_every_line_it_has_a_runtime_for_and_delta_where_s3a_is_known() -> None:
    """Iceberg writes S3 with its own S3FileIO (its aws bundle in every image); Delta through Hadoop's S3A."""
    for line, releases in ICEBERG_VERSIONS.items():
        stack = next(s for s in STACKS if s.line == line)
        for release in releases:
            asked = Stack(stack.kafka, stack.spark, release)
            assert store("iceberg").unsupported_on(asked, "s3") is None, asked
            assert f"org.apache.iceberg:iceberg-aws-bundle:{release}" in store("iceberg").jars(asked)
    spark_3 = next(s for s in STACKS if s.line == "3.5")
    assert "no S3A client" in (store("delta").unsupported_on(spark_3, "s3") or "")
    with pytest.raises(BadInput, match="no S3A client"):
        checked_store("delta", "s3", spark_3)
    assert checked_store("iceberg", "s3", spark_3) == "s3"


def test_delta_s_jar_is_named_by_the_spark_line_from_delta_4_1_on() -> None:
    assert artifact(Stack("", "4.1.1"), "4.4.0") == "io.delta:delta-spark_4.1_2.13:4.4.0"
    assert artifact(Stack("", "4.0.0"), "4.0.1") == "io.delta:delta-spark_2.13:4.0.1"
    assert artifact(Stack("", "3.5.7"), "3.3.3") == "io.delta:delta-spark_2.12:3.3.3"


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


def test_a_result_names_the_versions_of_what_it_ran_and_nothing_else() -> None:
    stack = Stack("4.1.1", "4.0.0", ICEBERG_VERSIONS["4.0"][0])
    assert set(stack.described("kafka")) == {"kafka", "spark"}
    assert set(stack.described("delta")) == {"kafka", "spark", "delta"}
    on_s3 = stack.described("iceberg", "s3")
    assert set(on_s3) == {"kafka", "spark", "iceberg", "versitygw", "iceberg_rest", "postgres"}  # its catalog's
    assert set(stack.described("delta", "s3")) == {"kafka", "spark", "delta", "versitygw"}


class _Dist:
    def __init__(self, name: str) -> None:
        self.name = name


def _point(name: str, value: str, dist: str) -> EntryPoint:
    return EntryPoint(name, value, registry.GROUP)._for(_Dist(dist))  # type: ignore[arg-type]


def test_the_default_store_comes_first_then_the_harness_s_own_then_other_packages_each_by_name() -> None:
    found = [_point("warehouse", "team.store:STORE", "team-store"), _point("paimon", "harness.output.paimon:STORE",
                                                                         "eo-harness"),
             _point("delta", "harness.output.delta:STORE", "eo-harness"), _point("aaa", "other:STORE", "other"),
             _point("kafka", "harness.output.kafka:STORE", "eo-harness")]
    assert list(registry.ordered(found)) == ["kafka", "delta", "paimon", "aaa", "warehouse"]


def test_a_name_two_packages_declare_is_refused_naming_both() -> None:
    found = [_point("delta", "harness.output.delta:STORE", "eo-harness"), _point("delta", "theirs:STORE", "theirs")]
    with pytest.raises(BadInput, match="declared twice.*harness.output.delta:STORE.*theirs:STORE"):
        registry.ordered(found)


def test_an_entry_point_that_does_not_load_or_names_another_store_is_bad_input() -> None:
    with pytest.raises(BadInput, match="does not load .*ModuleNotFoundError"):
        registry._loaded(_point("gone", "no_such_module_here:STORE", "x"))
    with pytest.raises(BadInput, match="no store of that name .*'kafka'"):
        registry._loaded(_point("mine", "harness.output.kafka:STORE", "x"))


def test_every_harness_store_is_declared_by_the_harness_s_own_package() -> None:
    assert {registry.package(name) for name in ("kafka", "delta", "postgres", "iceberg", "paimon", "hudi")} == {
        "eo-harness"}


def test_a_store_from_its_own_package_is_an_output_choice_and_the_harness_names_it_nowhere() -> None:
    """examples/files_store, installed beside the harness (run.sh setup and test), found by its entry point."""
    root = Path(__file__).resolve().parents[2]
    assert registry.package("files") == "eo-harness-files"
    assert "files" in (SETTINGS["output"].choices or ())
    assert not [path for path in (root / "harness").rglob("*.py") if "eo_files" in path.read_text()]
