"""A scenario's stall clock starts from the stream's first batch, not from the driver's launch: a driver
that starts slowly on a loaded machine is not a stream that stopped moving."""

from __future__ import annotations

import threading
import time

import pytest

from harness.run import consumption
from harness.run.consumption import ConsumptionWait

pytestmark = pytest.mark.unit


class Folder:
    """A checkpoint whose first batch is planned `first_batch_after` s after the wait began, then nothing."""

    def __init__(self, first_batch_after: float) -> None:
        self.first_batch_at = time.monotonic() + first_batch_after

    def listing(self) -> list:
        return []

    def planned(self, listing: list) -> list[int]:
        return [0] if time.monotonic() >= self.first_batch_at else []

    def committed(self, listing: list) -> list[int]:
        return []

    def consumed(self, topic: str, listing: list) -> dict[int, int]:
        return {0: 5} if self.planned(listing) else {}

    def stateful(self, listing: list) -> bool:
        return False


class Schedule:
    all_fired = False
    fired: dict = {}
    steps: list = []

    def unfired(self) -> list:
        return []


class Supervisor:
    restarting = threading.Event()
    restarts = 0

    def check(self, running: int | None) -> None:
        return None


class History:
    def record(self, kind: str, **fields: object) -> None:
        self.recorded = (kind, fields)


def wait(folder: Folder, stall: float) -> tuple[dict | None, float]:
    started = time.monotonic()
    reason = ConsumptionWait("stall", folder, "in", lambda: {0: 10}, Schedule(), Supervisor(), stall,  # type: ignore[arg-type]
                             History()).run()  # type: ignore[arg-type]
    return reason, time.monotonic() - started


def test_a_slow_start_is_not_a_stall_but_a_stream_that_stops_moving_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumption, "FIRST_BATCH_SECONDS", 6.0)
    reason, took = wait(Folder(first_batch_after=3.0), stall=1.0)  # the start takes 3 times the stall window
    assert reason is not None and reason["reason"].startswith("no progress for 1 s"), reason
    assert reason["consumed"] == 5 and took >= 4.0, (reason, took)  # moved once, then 1 s still


def test_a_driver_that_never_plans_a_batch_is_incomplete_after_the_start_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumption, "FIRST_BATCH_SECONDS", 2.0)
    reason, took = wait(Folder(first_batch_after=3600.0), stall=1.0)
    assert reason is not None and reason["reason"].startswith("no progress for 2 s") and reason["consumed"] == 0
    assert 2.0 <= took < 30.0, took  # stopped at the start limit (loosely above: a loaded runner sleeps long)
