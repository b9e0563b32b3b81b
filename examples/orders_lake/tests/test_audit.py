"""Unit tests of the lake's helpers: no Spark, no cluster (they run in a plain `pytest`)."""

import orjson
from orders_lake.audit import audit


def test_audit_names_the_record_by_its_sizes(cluster: dict[str, str]) -> None:
    assert orjson.loads(audit(b"k1", b"value")) == {"key_bytes": 2, "value_bytes": 5}
    assert cluster["name"] == "orders-prod"  # the project's fixture, beside the harness's eo_ ones
