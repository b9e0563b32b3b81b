"""A driver kept warm between scenarios: started while the previous scenario is read and checked, its JVM,
Spark context and executors are up when the next scenario starts, which then only hands it its arguments.

Only a scenario's first driver is taken from here; a replacement after a kill starts afresh, as before. A
standby holds the cluster's executor cores, so any other driver removes it first."""

from __future__ import annotations

import threading
from collections.abc import Callable

from harness.cluster.spark import StandbyDriver
from harness.errors import HarnessError
from harness.progress import say


class Standby:
    """At most one standby driver, launched in the background by `prepare`."""

    def __init__(self, make: Callable[[], StandbyDriver]) -> None:
        self.make = make
        self.driver: StandbyDriver | None = None
        self.launched = threading.Event()
        self.error: BaseException | None = None

    def prepare(self) -> None:
        """Launch a standby unless one is there."""
        if self.driver is not None:
            return
        self.driver, self.error = self.make(), None
        self.launched.clear()
        threading.Thread(target=self._launch, args=(self.driver,), name="standby-driver", daemon=True).start()

    def _launch(self, driver: StandbyDriver) -> None:
        try:
            driver.launch()
        except (HarnessError, RuntimeError, OSError) as error:  # taken as no standby: the scenario starts afresh
            self.error = error
        finally:
            self.launched.set()

    def take(self) -> StandbyDriver | None:
        """The standby once it is ready; None when there is none or it failed (then it is removed)."""
        driver, self.driver = self.driver, None
        if driver is None:
            return None
        self.launched.wait()
        if self.error is not None:
            say(f"the standby driver did not start, starting one afresh: {str(self.error).splitlines()[0]}")
            driver.remove()
            return None
        return driver

    def discard(self) -> None:
        """Remove the standby (once its launch is over, so that nothing of it outlives this call)."""
        driver, self.driver = self.driver, None
        if driver is not None:
            self.launched.wait()
            driver.remove()
