"""End-to-end latency of live input: per output second, from the input's acknowledged send to the
output record's timestamp; outputs that are not input records are not measured."""

import pytest

from harness.client.records import OutputRecord, Records
from harness.run.latency import end_to_end

pytestmark = pytest.mark.unit


def test_latency_is_measured_per_output_second_from_the_acked_send() -> None:
    acked = {f"id{n}": 1_000_000 + n * 10 for n in range(300)}
    records = [OutputRecord(0, n, None, b"", 1_000_000 + n * 10 + (50 if n < 100 else 400)) for n in range(300)]
    latency = end_to_end(Records(records), [f"id{n}" for n in range(300)], acked)
    assert latency is not None
    assert (latency["measured"], latency["median_ms"], latency["p99_ms"]) == (300, 400, 400)
    assert latency["per_second"][0] == [1000, 50, 50]
    assert [second for second, _, _ in latency["per_second"]] == [1000, 1001, 1002, 1003]


def test_outputs_that_are_not_input_records_are_not_measured() -> None:
    records = [OutputRecord(0, 0, None, b"", 5)]
    assert end_to_end(Records(records), ["user@window"], {"id0": 1}) is None
