"""SPARK-28650 (the guarantee withdrawn from the docs, Spark's behaviour unchanged): a `ForeachWriter` that
skips a (partition id, epoch id) it committed before loses and duplicates rows when a replayed epoch's
partitions read other Kafka partitions than the first attempt's.

Made certain as the Iceberg finding is (suites/test_finding_replays.py): one executor, so batch 0's partition 0
commits first, and the driver killed at that commit (`kill:driver@table.committed:0`). The first attempt reads
the Kafka partitions in the order the topic's name gives, the replay in its own (each a Scala map's order, the
Iceberg finding's page): when partition 0 read another Kafka partition the first time, the replay skips what
its partition 0 reads (lost) and writes that other one again (duplicate); when both read the same, the run is
exactly-once. The test asserts the one the orders predict."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.run.session import scenario, session
from suites.test_faults import assert_fired_with_effect
from suites.test_finding_replays import PARTITIONS, RECORDS, orders

pytestmark = [pytest.mark.chaos, pytest.mark.upstream]
SINK = f"{Path(__file__).resolve().parents[1] / 'fixtures' / 'user_sinks' / 'postgres_foreach_writer_epochs.py'}:sink"
FAULT = "kill:driver@table.committed:0"


@pytest.fixture(scope="module")
def one_executor() -> Iterator[object]:
    with session(workers=1, output="postgres") as opened:
        yield opened.cluster


@pytest.mark.parametrize("run", range(1, 4))
def test_spark_28650_a_foreach_writer_s_partition_and_epoch_do_not_name_the_same_rows_on_a_replay(  # type: ignore[no-untyped-def]
        one_executor, run: int) -> None:
    result = scenario(one_executor, f"spark-28650-{run}", sink=SINK, output="postgres", faults=[FAULT],
                      records=RECORDS, partitions=PARTITIONS).run()

    assert_fired_with_effect(result, FAULT)
    topic = next(e["input_topic"] for e in result.events("scenario.start"))
    first, replay = orders(topic, one_executor.images.stack.scala)
    if first[0] == replay[0]:  # partition 0 read the same Kafka partition both times
        assert result.exactly_once, (first, result.summary())
    else:
        anomalies = result.verdict.anomalies
        assert "lost" in anomalies and "duplicate" in anomalies, \
            f"SPARK-28650 did not show with orders {first} and {replay}: {result.summary()}"
