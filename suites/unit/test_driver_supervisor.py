"""Driver replacements: two kills at once take turns, so the second kills the driver the first started
(at once, both killed the same container and the second's removal failed with a conflict)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from harness.history import History
from harness.run.driver_supervisor import DriverSupervisor


class StandInDriver:
    """A driver that starts at once and keeps no log."""

    def __init__(self, number: int) -> None:
        self.alias = f"driver-{number}"

    def start(self) -> None:
        time.sleep(0.05)

    def save_log(self, folder: Path, filename: str) -> None:
        pass

    def log_text(self) -> str:
        return ""


class StandInCluster:
    def __init__(self) -> None:
        self.started: list[StandInDriver] = []
        self.removed: list[str] = []

    def new_driver(self, name: str, args: list[str]) -> StandInDriver:
        self.started.append(StandInDriver(len(self.started)))
        return self.started[-1]

    def remove_driver(self, driver: StandInDriver) -> None:
        assert driver.alias not in self.removed, "removed twice"
        self.removed.append(driver.alias)


def test_two_kills_at_once_take_turns_and_kill_one_driver_each(tmp_path: Path) -> None:
    cluster = StandInCluster()
    history = History(tmp_path / "history.jsonl")
    supervisor = DriverSupervisor(cluster, "d", [], history, tmp_path, "p", "s")  # type: ignore[arg-type]
    supervisor.start()
    killed: list[str] = []

    def kill() -> None:
        killed.append(supervisor.current().alias)
        time.sleep(0.1)

    threads = [threading.Thread(target=supervisor.replace, args=(kill,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history.close()
    assert killed == ["driver-0", "driver-1"]
    assert cluster.removed == ["driver-0", "driver-1"]
    assert supervisor.current().alias == "driver-2" and supervisor.restarts == 2
