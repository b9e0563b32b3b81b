"""The standby driver's hand-over: taken once ready, removed when it failed or is not wanted."""

from __future__ import annotations

import threading

import pytest

from harness.cluster.standby import Standby
from harness.errors import NotReady

pytestmark = pytest.mark.unit


class FakeDriver:
    """Stands in for a StandbyDriver's container: launch blocks until released, or fails."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.release = threading.Event()  # the app's executors came: it is ready
        self.removed = False
        self.on_created = lambda: None

    def launch(self) -> FakeDriver:
        self.on_created()
        self.release.wait(5)
        if self.fail:
            raise NotReady("container driver-standby-1 did not become ready: exited")
        return self

    def remove(self) -> None:
        self.removed = True


def test_take_waits_for_the_launch_and_hands_the_driver_over_once() -> None:
    driver = FakeDriver()
    standby = Standby(lambda: driver)  # type: ignore[arg-type, return-value]
    standby.prepare()
    threading.Timer(0.1, driver.release.set).start()
    assert standby.take() is driver
    assert standby.take() is None  # taken: the next scenario gets a new one only after prepare
    assert not driver.removed


def test_a_failed_launch_is_removed_and_gives_no_driver() -> None:
    driver = FakeDriver(fail=True)
    standby = Standby(lambda: driver)  # type: ignore[arg-type, return-value]
    standby.prepare()
    driver.release.set()
    assert standby.take() is None
    assert driver.removed


def test_prepare_keeps_the_one_standby_and_discard_removes_it_without_waiting_for_cores() -> None:
    made: list[FakeDriver] = []

    def make() -> FakeDriver:
        made.append(FakeDriver())
        return made[-1]

    standby = Standby(make)  # type: ignore[arg-type]
    standby.prepare()
    standby.prepare()
    assert len(made) == 1
    standby.discard()  # queued for cores the running scenario holds: removed at once, never waited for
    assert made[0].removed and not made[0].release.is_set()
    made[0].release.set()
    standby.prepare()
    assert len(made) == 2
