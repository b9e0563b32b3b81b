"""The reference sink's writer refuses to commit a partition whose input ended early.

PySpark ends a Python function's input iterator quietly when the JVM side fails mid-partition; the
writer's count against the partition's size is what stops a partial commit (see its docstring).
"""

import pytest

from harness.catalog.sinks.transactional import IncompleteInput, PartitionWriter
from harness.driver.sink import SinkContext

pytestmark = pytest.mark.unit


class RecordingProducer:
    """Stands in for confluent-kafka's Producer: the writer's row loop only calls produce()."""

    def __init__(self) -> None:
        self.produced: list[tuple] = []

    def produce(self, topic: str, value: bytes, key: bytes, **kwargs) -> None:
        self.produced.append((topic, key, value))


def writer(sizes: dict[int, int]) -> PartitionWriter:
    context = SinkContext(bootstrap="b:1", topic="out", sink_id="s", marker_topic="markers", checkpoint="/c")
    return PartitionWriter(context, batch_id=7, sizes=sizes)


def rows(n: int) -> list[dict]:
    return [{"key": f"k{i}", "value": f"v{i}"} for i in range(n)]


def test_a_whole_partition_is_produced() -> None:
    producer = RecordingProducer()
    writer({2: 3})._produce_rows(producer, iter(rows(3)), partition=2)
    assert len(producer.produced) == 3


@pytest.mark.parametrize("given, size", [(2, 3), (0, 3), (4, 3)])
def test_an_input_of_another_size_is_refused(given: int, size: int) -> None:
    with pytest.raises(IncompleteInput, match=f"batch 7 partition 1: input ended after {given} of {size}"):
        writer({1: size})._produce_rows(RecordingProducer(), iter(rows(given)), partition=1)


def test_an_empty_partition_has_size_zero() -> None:
    writer({})._produce_rows(RecordingProducer(), iter([]), partition=0)
