"""Which broker coordinates a transactional id: Kafka's own mapping (String.hashCode, Utils.abs, modulo);
the expected hashes are what Java 17's jshell printed. And when the cluster counts as in sync again."""

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cluster.brokers import (
    FRESH_STABLE_S,
    IN_SYNC_STABLE_S,
    KafkaCluster,
    in_sync_stable_s,
    java_hash,
    transaction_state_partition,
)

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


class Answers(KafkaCluster):
    """A cluster whose metadata answers come from a list (one a second), on a clock of its own."""

    def __init__(self, answers: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:  # no nodes started
        self.answers, self.now = answers, 0.0
        monkeypatch.setattr("harness.cluster.brokers.time.monotonic", lambda: self.now)
        monkeypatch.setattr("harness.cluster.brokers.time.sleep", self.sleep)

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def out_of_sync(self) -> list[str]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_in_sync_means_in_sync_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reconnected node's stale "every ISR full" is not the end of the wait: the next answers say otherwise."""
    behind = ["out-0: in sync [2, 3] of [1, 2, 3]"]
    kafka = Answers([[], [], behind, behind, []], monkeypatch)
    assert kafka.wait_in_sync(timeout=120, stable=12) == []
    assert kafka.now == 16  # in sync from the fifth answer on, and for 12 s
    assert Answers([behind], monkeypatch).wait_in_sync(timeout=30, stable=12) == behind
    flapping = Answers([[], behind] * 40, monkeypatch)
    assert flapping.wait_in_sync(timeout=30, stable=12) != []


def test_how_long_in_sync_must_hold_depends_on_what_the_faults_did() -> None:
    """Only a node paused or cut off the network may answer from a stale view: it waits past the ISR's lag."""
    assert in_sync_stable_s(1, {"isolate"}) == 0.0  # one node: no follower, no other view
    for actions in ({"kill"}, {"kill", "stop"}, {"partition"}, {"kill", "partition"}):
        assert in_sync_stable_s(3, actions) == FRESH_STABLE_S
    for actions in ({"isolate"}, {"pause"}, {"kill", "isolate"}):
        assert in_sync_stable_s(3, actions) == IN_SYNC_STABLE_S


def test_a_single_in_sync_answer_is_enough_when_nothing_must_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    behind = ["out-0: in sync [] of [1]"]
    kafka = Answers([behind, behind, []], monkeypatch)
    assert kafka.wait_in_sync(timeout=30, stable=0.0) == []
    assert kafka.now == 2


def test_the_brokers_guide_says_what_the_image_and_the_wait_do(broker_setting: Callable[[str], int]) -> None:
    """The guide's figures are the code's: the image's fencing and lag settings, the in-sync holds."""
    guide = " ".join((Path(__file__).parents[2] / "docs/guides/brokers.md").read_text().split())
    assert IN_SYNC_STABLE_S > broker_setting("replica.lag.time.max.ms") / 1000
    session_ms = broker_setting("broker.session.timeout.ms")
    assert f"`broker.session.timeout.ms={session_ms}`" in guide
    assert f"move within {session_ms // 1000} s" in guide
    assert f"`replica.lag.time.max.ms` ({IN_SYNC_STABLE_S:g} s)" in guide
    assert FRESH_STABLE_S == 2.0 and "two seconds after kills and cut links" in guide
