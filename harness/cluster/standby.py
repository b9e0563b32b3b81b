"""A driver kept warm between scenarios: launched while the previous scenario still runs, its JVM and Spark
context come up at once and its application waits in the master's queue for executor cores, which it
gets when the previous scenario's application ends (that one registered first, so it keeps its cores
through executor and worker losses); the next scenario then only hands it its arguments.

Only a scenario's first driver is taken from here; a replacement after a kill starts afresh, as before,
and removes the standby first: registered after it, the replacement would otherwise queue behind it."""

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
        self.created = threading.Event()  # its container exists (or its launch is over)
        self.error: BaseException | None = None

    def prepare(self) -> None:
        """Launch a standby unless one is there."""
        if self.driver is not None:
            return
        self.driver, self.error = self.make(), None
        self.launched.clear()
        self.created.clear()
        self.driver.on_created = self.created.set
        threading.Thread(target=self._launch, args=(self.driver,), name="standby-driver", daemon=True).start()

    def _launch(self, driver: StandbyDriver) -> None:
        try:
            driver.launch()
        except (HarnessError, RuntimeError, OSError) as error:  # taken as no standby: the scenario starts afresh
            self.error = error
        finally:
            self.created.set()
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
        """Remove the standby, once its container exists (so that nothing of it outlives this call): a
        standby still waiting for cores is never waited for."""
        driver, self.driver = self.driver, None
        if driver is not None:
            self.created.wait()
            driver.remove()
