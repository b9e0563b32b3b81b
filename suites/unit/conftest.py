"""Fixtures of the unit suites."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

from harness.gate import relay

# A property's examples are timed against a deadline by default: on a loaded machine (a CI runner beside
# clusters) a slow example fails a test that is right. What they test is what they compute, not how fast.
settings.register_profile("unit", deadline=None)
settings.load_profile("unit")

SECRET = "unit-secret"  # the run's secret the relay of these tests takes
START_BROKER = Path(__file__).parents[2] / "harness/images/kafka/start-broker.sh"
BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def benchmark_script() -> Callable[[str], ModuleType]:
    """Loads benchmarks/<name>.py as a module, as it runs as a script: its folder on the path while it imports
    (its `docs_page`, `machine_cpu`), and the module registered under its name (a dataclass looks it up)."""

    def load(name: str) -> ModuleType:
        sys.path.insert(0, str(BENCHMARKS))
        try:
            spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
        finally:
            sys.path.remove(str(BENCHMARKS))

    return load


@pytest.fixture
def broker_setting() -> Callable[[str], int]:
    """A whole-number setting of the Kafka image's brokers, as its start script writes it."""
    script = START_BROKER.read_text()

    def setting(name: str) -> int:
        return int(re.search(rf"^{re.escape(name)}=(\d+)$", script, re.M).group(1))

    return setting


@pytest.fixture
def relay_ports():
    """The relay (harness.gate.relay) on loopback, in a thread: (client port, service port)."""
    yield from _relay()


@pytest.fixture
def pg_relay_ports():
    """The relay with its PostgreSQL port: (client port, PostgreSQL client port, service port)."""
    yield from _relay(service_ports={"postgres": 0})


@pytest.fixture
def http_relay_ports():
    """The relay with its S3 and catalog ports: (client port, S3 client port, catalog client port, service port)."""
    yield from _relay(service_ports={"s3": 0, "catalog": 0})


def _relay(**ports: object):  # type: ignore[no-untyped-def]
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    # its tunnels may reach loopback only, as a relay's reach the run's own containers only
    listening = relay.listen(SECRET, "127.0.0.1", (0,), 0, ("127.0.0.1",), **ports)
    servers = asyncio.run_coroutine_threadsafe(listening, loop).result(timeout=5)
    yield tuple(server.sockets[0].getsockname()[1] for server in servers)
    for server in servers:
        loop.call_soon_threadsafe(server.close)
    asyncio.run_coroutine_threadsafe(_cancel_connections(), loop).result(timeout=5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    loop.close()


async def _cancel_connections() -> None:
    """End the connections a test left open while the loop still runs (else their coroutines are finalized
    on a closed loop, and pytest warns of an exception it could not raise)."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
