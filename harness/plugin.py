"""The pytest plugin (entry point `pytest11`, found on its own once installed): markers, options, the
session-wide cluster, the `eo_scenario` fixture for users' own tests, the certification matrix of a
sink given with `--sink`, and logs kept for every failed test.

Settings resolve in one place, `setting()`: marker > command line > environment > ini.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import versions
from harness.errors import HarnessError
from harness.interrupt import terminate_like_ctrl_c
from harness.matrix import LIVE_RATE
from harness.report.folders import REPORTS_ENV

MARKERS = {
    "unit": "pure logic, no Docker",
    "smoke": "the cluster and the passthrough pipeline end to end",
    "integration": "harness parts against the real broker (reader, check command)",
    "chaos": "fault scenarios against real Kafka, Spark and toxiproxy (the full matrix)",
    "gate": "the chaos scenarios CI runs on every change (a subset of chaos)",
    "stall_timeout(seconds)": "how long a scenario may go without progress before it is incomplete",
}
SETTINGS = {
    # name: (command-line option, environment variable, ini key, default)
    "stall_timeout": ("--stall-timeout", "HARNESS_STALL_TIMEOUT", "harness_stall_timeout", "180"),
    "sink": ("--sink", "HARNESS_SINK", "harness_sink", ""),
    "rate": ("--rate", "HARNESS_RATE", "harness_rate", f"{LIVE_RATE:g}"),  # records/s of the matrix's live rows
    "reports": ("--reports", REPORTS_ENV, "harness_reports", "reports"),  # relative to the current folder
    "kafka": ("--kafka", versions.KAFKA_ENV, "harness_kafka", versions.KAFKA_VERSIONS[0]),  # the broker's release
    "spark": ("--spark", versions.SPARK_ENV, "harness_spark", versions.SPARK_VERSIONS[0]),  # Spark's release
    # comma-separated DOCKER_HOSTs: pytest-xdist's worker i runs its cluster on engine i (modulo their number)
    "docker_hosts": ("--docker-hosts", "HARNESS_DOCKER_HOSTS", "harness_docker_hosts", ""),
}
SINK_MATRIX = Path(__file__).with_name("sink_matrix.py")  # the tests collected for a sink given with --sink
FAILED = pytest.StashKey[bool]()
SESSION = pytest.StashKey[str]()  # the session's id: its workers' run ids and the merged report's folder


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "exactly-once chaos harness")
    for name, (option, env, ini, default) in SETTINGS.items():
        help_text = f"{name.replace('_', ' ')} (env {env}, ini {ini}; default {default})"
        group.addoption(option, dest=name, default=None, help=help_text)
        parser.addini(ini, help_text, default=default)


def pytest_configure(config: pytest.Config) -> None:
    for marker, text in MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: {text}")
    terminate_like_ctrl_c()  # a SIGKILL is swept by the next run
    os.environ[REPORTS_ENV] = str(Path(config_setting(config, "reports")).resolve())
    for name in ("kafka", "spark"):  # the images of the session's cluster follow them
        os.environ[SETTINGS[name][1]] = config_setting(config, name)
    try:
        versions.stack()
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    if config_setting(config, "sink") and str(SINK_MATRIX) not in config.args:
        config.args.append(str(SINK_MATRIX))  # `pytest -m chaos --sink my_sink.py:sink` in any project
    from harness.cluster.engine import docker_hosts
    from harness.cluster.labels import new_run_id

    worker = getattr(config, "workerinput", None)  # set in pytest-xdist's workers
    config.stash[SESSION] = worker["harness_session"] if worker else new_run_id()
    try:
        hosts = docker_hosts(config_setting(config, "docker_hosts"))
    except HarnessError as error:
        raise pytest.UsageError(str(error)) from None
    if hosts:
        os.environ["DOCKER_HOST"] = hosts[_worker_index(config) % len(hosts)]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller: every worker learns the session's id."""
    node.workerinput["harness_session"] = node.config.stash[SESSION]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the controller of a pytest-xdist run: one index over the scenarios of every worker's run."""
    config = session.config
    if getattr(config, "workerinput", None) is not None or not config.pluginmanager.hasplugin("dsession"):
        return
    from harness.report import write_index
    from harness.report.folders import run_report_dir

    folder = run_report_dir(config.stash[SESSION])
    parts = sorted(folder.parent.glob(f"{folder.name}-gw*"))
    if parts:
        write_index(folder, parts)


def _worker_index(config: pytest.Config) -> int:
    """This process's pytest-xdist worker number (gw3: 3); 0 without xdist."""
    worker = getattr(config, "workerinput", None)
    return int(worker["workerid"].removeprefix("gw")) if worker else 0


def _run_id(config: pytest.Config) -> str | None:
    """A worker's cluster is named after the session and the worker (reports/<session>-gw0/ ...)."""
    worker = getattr(config, "workerinput", None)
    return f"{config.stash[SESSION]}-{worker['workerid']}" if worker else None


def config_setting(config: pytest.Config, name: str) -> str:
    """A harness setting where no test is at hand (collection): command line > environment > ini."""
    _, env, ini, _ = SETTINGS[name]
    from_cli = config.getoption(name)
    if from_cli is not None:
        return str(from_cli)
    if env in os.environ:
        return os.environ[env]
    return str(config.getini(ini))


def setting(request: pytest.FixtureRequest, name: str) -> str:
    """A harness setting: marker > command line > environment > ini."""
    marker = request.node.get_closest_marker(name)
    if marker is not None and marker.args:
        return str(marker.args[0])
    return config_setting(request.config, name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The cluster, started once per session (per worker under pytest-xdist, on the worker's engine; images
    built first if missing), removed at the end; the run's index page lists its scenarios."""
    from harness.cluster import images
    from harness.cluster.engine import engine_socket_url
    from harness.cluster.topology import Cluster
    from harness.report import write_index
    from harness.report.folders import run_report_dir

    try:
        images.build_all()
        running = Cluster(run_id=_run_id(request.config)).start()
    except HarnessError as error:
        pytest.exit(f"harness: error: {error}", returncode=error.exit_status)
    folder = run_report_dir(running.run_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"run": running.run_id, "engine": engine_socket_url()}))
    try:
        yield running
    finally:
        running.save_logs(folder / "cluster")
        running.stop()
        write_index(folder)


@pytest.fixture(autouse=True)
def _logs_of_failed_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """Keep every container's log in the test's report folder when a test that uses the cluster fails."""
    yield
    if "cluster" in request.fixturenames and request.node.stash.get(FAILED, False):
        from harness.report.folders import run_report_dir

        running = request.getfixturevalue("cluster")
        running.save_logs(run_report_dir(running.run_id) / request.node.name / "logs")


@pytest.fixture
def live_rate(request: pytest.FixtureRequest) -> float:
    """Records per second of live input (the matrix's live rows), produced while the stream runs."""
    return float(setting(request, "rate"))


@pytest.fixture
def stall_timeout(request: pytest.FixtureRequest) -> float:
    """Seconds without progress (input consumed, a batch planned, a fault, a restart) before a scenario
    stops waiting and is `incomplete`: there is no fixed deadline, so larger workloads finish."""
    return float(setting(request, "stall_timeout"))


@pytest.fixture
def eo_scenario(request: pytest.FixtureRequest, cluster: Any, stall_timeout: float) -> Callable[..., Any]:
    """Run one scenario on the session's cluster and return its ScenarioResult (`.exactly_once`,
    `.summary()`, `.verdict`, `.events()`); its report folder is named after the test id.

        result = eo_scenario(pipeline="pipelines/orders.py", sink="sinks/upsert.py:sink",
                             faults=["kill:driver@txn.commit"], records=50_000)
        assert result.exactly_once, result.summary()
    """
    from harness.faults.spec import parse_schedule
    from harness.scenario import Scenario
    from harness.workload import Workload

    test_id = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
    calls = itertools.count(1)

    def run(pipeline: str = "passthrough", sink: str = "transactional", faults: Sequence[str] = (),
            records: int = 20_000, seed: int = 1, rate: float = 0.0, state_store: str = "hdfs") -> Any:
        n = next(calls)  # a test's second scenario gets a name of its own
        name = test_id if n == 1 else f"{test_id}-{n}"
        return Scenario(cluster, name, pipeline=pipeline, sink=sink, faults=parse_schedule(list(faults)),
                        workload=Workload(records, seed=seed), stall_timeout=stall_timeout, rate=rate,
                        state_store=state_store).run()

    return run
