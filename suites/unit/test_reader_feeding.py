"""Batches reach the reader's callback in order, on another thread, and its errors are not lost."""

import threading

import pytest

from harness.reader import feeding

pytestmark = pytest.mark.unit


def test_every_batch_arrives_in_order_before_the_read_returns() -> None:
    seen: list[tuple[list[int], str]] = []
    with feeding(lambda batch: seen.append((batch, threading.current_thread().name))) as feed:
        for n in range(50):
            feed([n, n + 1])
    assert [batch for batch, _ in seen] == [[n, n + 1] for n in range(50)]
    assert {name for _, name in seen} == {"reader-batches"}


def test_an_error_in_the_callback_is_raised_after_the_read() -> None:
    calls: list[list[int]] = []

    def fails_once(batch: list[int]) -> None:
        calls.append(batch)
        raise ValueError("checker crashed")

    with pytest.raises(ValueError, match="checker crashed"):
        with feeding(fails_once) as feed:
            feed([1])
            feed([2])
    assert calls == [[1]]  # nothing more is handed to a callback that failed


def test_an_error_in_the_read_is_not_masked() -> None:
    with pytest.raises(KeyError):
        with feeding(lambda batch: None) as feed:
            feed([1])
            raise KeyError("broker gone")
