"""The pytest plugin (entry point `pytest11`, found on its own once installed): markers, options, the session-wide
cluster, the `eo_scenario` fixture for users' own tests, the certification matrix of a sink given with `--sink`
(or of a Flink job: `--engine flink --job`), and logs kept for every failed test. pytest finds hooks and
fixtures on this module alone; what they use is beside it: a test's properties, as the JUnit file and the exit
status read them (harness.plugin_properties), and the clusters its tests start (harness.plugin_clusters).

Settings resolve in one place, `setting()`: marker > command line > environment > ini.

JUnit (`--junitxml`, pytest's default junit_family xunit2): the sink matrix's rows have a class name
(`harness.sink_matrix`), and a cluster that cannot start is an error row saying why.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import xml_key  # the JUnit file's writer: record_testsuite_property's own way to it

from harness import settings, versions
from harness.certify.recorded import OBSERVED, ROW, write_from_properties
from harness.certify.rows import MatrixRun
from harness.cluster.engine import docker_hosts
from harness.cluster.labels import new_run_id
from harness.cluster.topology import Cluster
from harness.errors import EXIT_BAD_INPUT, HarnessError
from harness.faults.glossary import parse_steps
from harness.interrupt import terminate_like_ctrl_c
from harness.output.registry import store
from harness.plugin_clusters import CANNOT_START, SESSION, OtherSizes, cannot_start, cluster_run_id, starts_clusters
from harness.plugin_properties import (
    NOT_STARTED,
    OUTCOME,
    PROPERTIES,
    RECORDED,
    UNTRIED,
    JunitProperties,
    contract_status,
    record,
)
from harness.report import write_index
from harness.report.folders import run_report_dir
from harness.run.flink_session import flink_session
from harness.run.scenario_result import ScenarioResult
from harness.run.session import Session, scenario, session
from harness.subject import dependencies

MARKERS = {
    "unit": "pure logic, no Docker",
    "smoke": "the cluster and the passthrough pipeline end to end",
    "integration": "harness parts against the real broker (reader, check command)",
    "chaos": "fault scenarios against real Kafka, Spark and toxiproxy (the full matrix)",
    "gate": "what CI runs beside the unit tests: a chaos scenario each way per output, the trust boundary",
    "stall_timeout(seconds)": "how long a scenario may go without progress before it is incomplete",
    "brokers(n)": "the Kafka brokers of eo_scenario's cluster: the session's when it has as many, else one "
                  "started for the tests that ask for n",
    "spark(line)": "the Spark release or line (3.5) of the test's cluster: the session's when it is that one, else "
                   "one started for the tests that ask for it (a table format that runs on one line only)",
    "iceberg(version)": "the Iceberg release in the Spark image of the test's cluster (an affected release and a "
                        "fixed one, each on a cluster of its own)",
    "upstream": "a bug reproduced in a released component: asserts the anomaly the public issue reports, and "
                "fails on the day a fixed release is used",
    "finding": "a bug the harness found (docs/findings/), shown every time: its reproducer without the harness, and "
               "its end-to-end run made certain, in each release that carries it; fails on the day a release fixes it",
}
# The settings a pytest run takes (harness.settings: one table for the CLI and the plugin).
OPTIONS = tuple(name for name, s in settings.SETTINGS.items() if s.pytest)
SINK_MATRIX = Path(__file__).with_name("sink_matrix.py")  # the tests collected for a sink given with --sink
FAILED = pytest.StashKey[bool]()
USED = pytest.StashKey[Cluster]()  # the cluster a test's eo_scenario ran on: its logs are kept if it fails
ENVIRONMENT = pytest.StashKey[dict[str, str]]()  # the settings as the harness's processes read them
CERTIFIED = pytest.StashKey[tuple[Path, dict]]()  # a sink matrix's certificate: its folder, and what it says


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "exactly-once chaos harness")
    for name in OPTIONS:
        setting = settings.SETTINGS[name]
        help_text = f"{settings.help_text(setting)}; ini {setting.ini}"
        if name == "sink":
            help_text = (f"run this sink's whole certification matrix, a test id per scenario (alone unless test "
                         f"paths are given, then beside them); {help_text}")
        group.addoption(setting.flag, dest=name, default=None, help=help_text,
                        **({"action": "append"} if setting.many else {}))
        parser.addini(setting.ini, help_text, default="")
    for old in settings.RENAMED:
        group.addoption(f"--{old}", dest=f"renamed_{old}", default=None, help=argparse.SUPPRESS)


def _bad_input(message: str) -> None:
    """Stop before anything starts with the contract's bad-input status (pytest's own usage error is 4)."""
    pytest.exit(f"harness: error: {message}", returncode=EXIT_BAD_INPUT)


def pytest_configure(config: pytest.Config) -> None:
    """Markers, and the settings checked (bad input stops the session before anything starts); what the
    harness's processes read of them is put in the environment only for a session that runs tests that
    start clusters (`pytest_collection_modifyitems`), which also get SIGTERM handled as Ctrl-C."""
    for marker, text in MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: {text}")
    for old, instead in settings.RENAMED.items():
        if config.getoption(f"renamed_{old}") is not None:
            _bad_input(instead)
    renamed = settings.renamed_in_environment()
    if renamed:
        _bad_input(renamed)
    environment = {settings.SETTINGS["reports"].env: str(Path(settings.from_pytest(config, "reports")).resolve())}
    try:
        subject = settings.matrix_subject(config)
    except HarnessError as error:
        _bad_input(str(error))
    if subject and settings.given(config, "brokers") is None:
        environment[settings.SETTINGS["brokers"].env] = str(settings.FULL_CERTIFICATION_BROKERS)  # a full matrix
    with _environment(dict(environment)):  # a full matrix's brokers, as the settings below read it
        for name in ("kafka", "spark", "flink", "iceberg", "brokers", "restarts", "registry",  # the cluster, images,
                     "image_max_age", "debian_mirror", "debian_security_mirror",
                     "output", "store", "pipeline", "engine_read",  # the scenarios
                     *dependencies.SETTINGS):  # the sink's dependencies
            try:
                environment[settings.SETTINGS[name].env] = str(settings.from_pytest(config, name))
            except ValueError as error:
                _bad_input(str(error))
        for name in ("engine", "job"):  # only as given: a job in the environment is a Flink run's
            if settings.given(config, name) is not None:
                environment[settings.SETTINGS[name].env] = str(settings.from_pytest(config, name))
        try:  # what ships with the sink, checked now (a file named is read, a setting the harness owns refused)
            dependencies.from_settings(partial(settings.given, config))
        except HarnessError as error:
            _bad_input(str(error))
    with _environment(environment):  # the versions as the session's clusters will read them
        try:
            why = store(settings.from_pytest(config, "output")).unsupported(versions.stack())
        except HarnessError as error:
            _bad_input(str(error))
    if why:  # the session's output, on the session's Spark line (a test's own `spark(line)` marker is its own)
        _bad_input(f"output {settings.from_pytest(config, 'output')}: {why}")
    if subject:
        config.args = sink_args(config.args, config.args_source)
    worker = getattr(config, "workerinput", None)  # set in pytest-xdist's workers
    config.stash[SESSION] = worker["harness_session"] if worker else new_run_id()
    try:
        hosts = docker_hosts(settings.from_pytest(config, "docker_hosts"))
    except HarnessError as error:
        _bad_input(str(error))
    if hosts:
        environment["DOCKER_HOST"] = hosts[_worker_index(config) % len(hosts)]
    config.stash[ENVIRONMENT] = environment


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Chaos tests start clusters: in a run that did not ask for them by a marker expression (`-m chaos`) or
    a sink's matrix (`--sink`), they are skipped, saying how to run them. A session that runs tests that start
    clusters gets the harness's settings in its environment and SIGTERM handled as Ctrl-C (so an interrupted
    run removes what it started); one that runs none is left as it was."""
    asked = bool(config.getoption("markexpr", "")) or settings.matrix_subject(config) is not None
    if not asked:
        skip = pytest.mark.skip(reason="a chaos test starts clusters: run it with -m chaos")
        for item in items:
            if item.get_closest_marker("chaos") is not None:
                item.add_marker(skip)
    if any(starts_clusters(item) for item in items):
        os.environ.update(config.stash[ENVIRONMENT])
        terminate_like_ctrl_c()  # a SIGKILL is swept by the next run


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in the environment for the block, the environment as it was after it."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def sink_args(args: list[str], source: pytest.Config.ArgsSource) -> list[str]:
    """What `--sink` collects: the sink's matrix alone when no path was given (not the `testpaths` of the
    project it runs in: in the harness's checkout, its own chaos suites); beside the paths given, else."""
    matrix = str(SINK_MATRIX)
    if source != pytest.Config.ArgsSource.ARGS:
        return [matrix]
    return args if matrix in args else [*args, matrix]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller: every worker learns the session's id."""
    node.workerinput["harness_session"] = node.config.stash[SESSION]


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The sink matrix's ids start `harness/sink_matrix.py::` wherever the harness is installed: pytest names
    a file outside the project after nothing (`::test_sink_scenario[...]`), so its JUnit rows had
    `classname=""`."""
    if module_path != SINK_MATRIX:
        return None
    return pytest.Module.from_parent(parent, path=module_path, nodeid=f"harness/{SINK_MATRIX.name}")


def pytest_sessionstart(session: pytest.Session) -> None:
    xml = session.config.stash.get(xml_key, None)
    if xml is not None:
        session.config.pluginmanager.register(JunitProperties(xml), "eo_harness_junit")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The exit contract's status; a sink matrix's certificate; in the controller of a pytest-xdist run, one
    index over the scenarios of every worker's run."""
    config = session.config
    if getattr(config, "workerinput", None) is not None:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        session.exitstatus = contract_status(int(session.exitstatus), reporter.stats)
        if settings.matrix_subject(config):
            _certificate(config, reporter.stats)
    if not config.pluginmanager.hasplugin("dsession"):
        return
    folder = run_report_dir(config.stash[SESSION])
    parts = sorted(folder.parent.glob(f"{folder.name}-gw*"))
    if parts:
        write_index(folder, parts)


def _certificate(config: pytest.Config, stats: dict[str, list[Any]]) -> None:
    """The sink matrix's certificate, as `certify` writes it, from the rows its tests recorded (in any worker),
    in the session's folder; kept for the summary."""
    recorded = [(k, v) for reports in stats.values() for r in reports for k, v in getattr(r, PROPERTIES, ())
                if k in (ROW, OBSERVED)]
    folder = run_report_dir(config.stash[SESSION]) / "certificate"
    with _environment(config.stash.get(ENVIRONMENT, {})):
        run = MatrixRun(str(settings.matrix_subject(config)), engine=settings.from_pytest(config, "engine"))
        written = write_from_properties(dict.fromkeys(recorded), folder, run)
    if written is not None:
        config.stash[CERTIFIED] = (folder, written)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A sink matrix's certificate, and its verdict in certify's words; why one that passed is not a
    certification (its status becomes 4)."""
    config = getattr(terminalreporter, "config", None)
    written = config.stash.get(CERTIFIED, None) if config is not None else None
    if written is not None:
        folder, certificate = written
        terminalreporter.write_line(f"harness: {certificate['sink']} with pipeline {certificate['pipeline']}: "
                                    f"{certificate['verdict']}; certificate: {folder}/certificate.json, "
                                    f"{folder}/index.html")
    untried = [v for r in terminalreporter.stats.get("skipped", ()) for k, v in getattr(r, PROPERTIES, ())
               if k == UNTRIED]
    if untried:
        terminalreporter.write_line(f"harness: not certified: {len(untried)} applicable rows need --brokers "
                                    f"{settings.FULL_CERTIFICATION_BROKERS} ({', '.join(untried)})")


def _worker_index(config: pytest.Config) -> int:
    """This process's pytest-xdist worker number (gw3: 3); 0 without xdist."""
    worker = getattr(config, "workerinput", None)
    return int(worker["workerid"].removeprefix("gw")) if worker else 0


def setting(request: pytest.FixtureRequest, name: str) -> Any:
    """A harness setting: marker > command line > environment > ini > default."""
    marker = request.node.get_closest_marker(name)
    if marker is not None and marker.args:
        return settings.SETTINGS[name].type(str(marker.args[0]))
    return settings.from_pytest(request.config, name)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[FAILED] = True
        if CANNOT_START in item.session.stash and not any(k == NOT_STARTED for k, _ in item.stash.get(RECORDED, ())):
            record(item, NOT_STARTED, item.session.stash[CANNOT_START])
    setattr(report, PROPERTIES, list(item.stash.get(RECORDED, ())))
    return report


@pytest.fixture(scope="session")
def eo_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The session's cluster, started once (per worker under pytest-xdist, on the worker's engine; images
    built first if missing), removed at the end; the run's index page lists its scenarios."""
    with ExitStack() as stack:
        opens = flink_session if settings.from_pytest(request.config, "engine") == settings.FLINK else session
        try:
            opened = stack.enter_context(opens(run_id=cluster_run_id(request.config)))
        except HarnessError as error:
            cannot_start(request.session, error)
        yield opened


@pytest.fixture(scope="session")
def eo_cluster(eo_session: Session) -> Cluster:
    """The session's running cluster (named for the harness, as pytest plugins name their fixtures: a project's
    own `cluster` fixture is its own)."""
    return eo_session.cluster


@pytest.fixture(scope="session")
def _other_sizes(request: pytest.FixtureRequest) -> Iterator[OtherSizes]:
    with ExitStack() as stack:
        yield OtherSizes(request.config, stack, request.session)


def _cluster_for(request: pytest.FixtureRequest) -> Cluster:
    """The cluster a test's scenarios run on: the session's, unless its `brokers(n)` marker asks for
    another size."""
    brokers = setting(request, "brokers")
    marked = {name: str(marker.args[0]) for name in ("spark", "iceberg")
              if (marker := request.node.get_closest_marker(name)) is not None and marker.args}
    stack = versions.stack(marked.get("spark"), marked.get("iceberg"))
    if brokers == settings.from_pytest(request.config, "brokers") and stack == versions.stack():
        running = request.getfixturevalue("eo_cluster")
    else:
        running = request.getfixturevalue("_other_sizes").of(brokers, stack)
    request.node.stash[USED] = running
    return running


@pytest.fixture(autouse=True)
def _logs_of_failed_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """Keep every container's log in the test's report folder when a test that uses the cluster fails."""
    yield
    if not request.node.stash.get(FAILED, False) or CANNOT_START in request.session.stash:
        return
    running = request.node.stash.get(USED, None)
    if running is None and "eo_cluster" in request.fixturenames:
        running = request.getfixturevalue("eo_cluster")
    if running is not None:
        running.save_logs(run_report_dir(running.run_id) / request.node.name / "logs")


@pytest.fixture
def eo_live_rate(request: pytest.FixtureRequest) -> float:
    """Records per second of live input (the matrix's live rows), produced while the stream runs."""
    return setting(request, "live_rate")


@pytest.fixture
def eo_stall_timeout(request: pytest.FixtureRequest) -> float:
    """Seconds without progress (input consumed, a batch planned, a fault, a restart) before a scenario
    stops waiting and is `incomplete`: there is no fixed deadline, so larger workloads finish."""
    return setting(request, "stall_timeout")


@pytest.fixture
def eo_scenario(request: pytest.FixtureRequest, eo_stall_timeout: float) -> Callable[..., ScenarioResult]:
    """Run one scenario on the session's cluster (on one of n brokers with `@pytest.mark.brokers(n)`) and
    return its ScenarioResult (`.exactly_once`, `.outcome`, `.summary()`, `.verdict`, `.events()`); its
    report folder is named after the test id. Unset arguments take the harness's defaults (harness.settings).

        result = eo_scenario(pipeline="pipelines/orders.py", sink="sinks/upsert.py:sink",
                             faults=["kill:driver@txn.commit"], records=50_000)
        result = eo_scenario(sink="sinks/delta_upsert.py:sink", output="delta",
                             faults=["kill:driver@table.committed:2"])
        assert result.exactly_once, result.summary()

    `eo_scenario.cluster` is the cluster the scenarios run on (its `files`: the run's volume).
    """
    test_id = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)).strip("-._")
    running = _cluster_for(request)
    calls = itertools.count(1)

    def run(faults: Sequence[str] = (), **options: Any) -> ScenarioResult:
        n = next(calls)  # a test's second scenario gets a name of its own
        name = test_id if n == 1 else f"{test_id}-{n}"
        parse_steps([str(step) for step in faults])  # a class or row name: bad input saying which steps to write
        result = scenario(running, name, faults=faults, stall_timeout=eo_stall_timeout, **options).run()
        record(request.node, OUTCOME, result.outcome)
        return result

    run.cluster = running  # type: ignore[attr-defined]  # the cluster it runs on: a test may read the volume
    return run
