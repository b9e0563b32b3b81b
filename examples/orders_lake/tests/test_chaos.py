"""The orders lake keeps exactly-once through a driver killed right after Delta committed a batch (before
Spark's own commit log says so), with its packages, jar and setting shipped as pyproject.toml says.

Chaos tests start Kafka and Spark: `pytest -m chaos` runs them; a plain `pytest` skips them."""

import pytest

pytestmark = pytest.mark.chaos


def test_the_lake_survives_a_driver_kill_after_its_table_commit(eo_scenario, cluster) -> None:
    result = eo_scenario(sink="orders_lake.sink:sink", faults=["kill:driver@table.committed:2"], records=3_000)
    assert result.events("effect"), "the driver kill fired but had no effect"
    assert result.exactly_once, result.summary()
    shipped = result.to_dict()["dependencies"]
    assert [w["name"] for w in shipped["python"]] == ["orjson"], shipped
    assert any(j["coordinate"].startswith("org.apache.spark:spark-avro_") for j in shipped["jars"]), shipped
    assert cluster["name"] == "orders-prod"  # the project's own `cluster` fixture is untouched
