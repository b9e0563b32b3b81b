"""Which broker coordinates a transactional id: Kafka's own mapping (String.hashCode, Utils.abs, modulo);
the expected hashes are what Java 17's jshell printed."""

import pytest

from harness.cluster.brokers import java_hash, transaction_state_partition

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, expected", [("", 0), ("abc", 96354), ("transactional-id", 510590431),
                                            ("polygenelubricants", -2147483648), ("é€", 15587),
                                            ("sink-p3", 2094590781)])
def test_java_hash_matches_java(text: str, expected: int) -> None:
    assert java_hash(text) == expected


def test_the_transaction_state_partition_as_kafka_computes_it() -> None:
    assert transaction_state_partition("abc") == 96354 % 4
    assert transaction_state_partition("sink-p3") == 2094590781 % 4
    assert transaction_state_partition("polygenelubricants") == 0  # Integer.MIN_VALUE: Utils.abs gives 0
