"""One CLI and one exit contract: the settings every command takes before or after its name, the renamed
--rate, --version, the statuses of certify, shrink and the pytest plugin, and class names in --fault."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness
from harness import plugin
from harness.certify.certification import certification_status
from harness.checker.judge import INEFFECTIVE
from harness.checker.verdict import FAIL, PASS, UNKNOWN
from harness.cli import main, parser
from harness.cli import shrink as shrink_command
from harness.cli.options import GLOBAL
from harness.errors import EXIT_BAD_INPUT, EXIT_CODES, EXIT_FLAKY, EXIT_INFRASTRUCTURE, EXIT_NOT_EVERY_CLASS
from harness.explore.shrink import Shrunk
from harness.faults.glossary import every_class, instead_of_step
from harness.faults.space import MIN_BROKERS
from harness.faults.spec import parse_schedule
from harness.plugin_properties import OUTCOME, PROPERTIES, UNTRIED, contract_status
from harness.settings import FULL_CERTIFICATION_BROKERS, SETTINGS

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
VALUES = {"reports": "out", "kafka": "3.9.1", "spark": "3.5.7", "flink": "2.2", "iceberg": "1.10.1", "brokers": "3",
          "registry": "127.0.0.1:5000/eo", "image_max_age": "2.5", "debian_mirror": "http://127.0.0.1:3142/debian",
          "debian_security_mirror": "http://127.0.0.1:3142/debian-security"}
REQUIRED = {"run": [], "certify": ["--sink", "s"], "explore": ["--sink", "s"], "shrink": ["folder"],
            "check": ["--bootstrap", "b", "--input", "i", "--output", "o"], "images": ["build"],
            "engine": ["stop", "n"]}


def commands() -> dict[str, argparse.ArgumentParser]:
    root = parser()
    return next(a for a in root._actions if isinstance(a, argparse._SubParsersAction)).choices


def minimal(name: str, sub: argparse.ArgumentParser) -> list[str]:
    """The fewest arguments `name` parses with (its positional choices, its required flags)."""
    if name in REQUIRED:
        return REQUIRED[name]
    positional = [a for a in sub._actions if not a.option_strings and a.required and a.dest != "help"]
    return [next(iter(a.choices)) if a.choices else "x" for a in positional]


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_takes_the_global_settings_before_or_after_its_name(name: str) -> None:
    rest = minimal(name, commands()[name])
    for setting in GLOBAL:
        flag, value = SETTINGS[setting].flag, VALUES[setting]
        before = parser().parse_args([flag, value, name, *rest])
        after = parser().parse_args([name, *rest, flag, value])
        expected = SETTINGS[setting].type(value)
        assert getattr(before, setting) == getattr(after, setting) == expected, (name, setting)
    assert parser().parse_args([name, *rest]).reports is None  # not given: the environment or the default


def test_version_is_the_package_s(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"eo-harness {harness.__version__}"


@pytest.mark.parametrize("argv", [["run", "--rate", "5"], ["certify", "--sink", "s", "--rate", "5"],
                                  ["explore", "--sink", "s", "--rate", "5"]])
def test_the_old_rate_is_refused_saying_what_to_write(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(argv)
    assert stopped.value.code == EXIT_BAD_INPUT
    said = capsys.readouterr().err
    assert "--live-rate R" in said and "--input-rate R" in said


def test_the_old_rate_variable_is_refused(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_RATE", "100")
    assert main(["doctor"]) == EXIT_BAD_INPUT
    assert "HARNESS_LIVE_RATE" in capsys.readouterr().err


def test_run_takes_its_input_rate_and_certify_its_live_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_LIVE_RATE", "700")
    assert parser().parse_args(["run", "--input-rate", "50"]).input_rate == 50.0
    assert parser().parse_args(["run"]).input_rate == 0.0  # a backlog: no setting changes one scenario's input
    assert parser().parse_args(["certify", "--sink", "s"]).live_rate == 700.0
    assert parser().parse_args(["explore", "--sink", "s", "--live-rate", "9"]).live_rate == 9.0


def test_every_flag_of_a_setting_takes_the_table_s_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table against the parser: wherever a setting's flag is, its default and its variable are the table's."""
    for setting in SETTINGS.values():
        monkeypatch.delenv(setting.env, raising=False)
    seen = set()
    for name, sub in commands().items():
        for action in sub._actions:
            setting = SETTINGS.get(action.dest)
            if setting is None or action.default is argparse.SUPPRESS or name == "check":
                continue  # the global settings are the root's; check reads a topic, not the table's pipeline
            seen.add(setting.name)
            assert action.option_strings == [setting.flag], (name, setting.name)
            assert action.default in (setting.type(setting.default), None), (name, setting.name)
            value = {"brokers": "2", "state_store": "rocksdb", "docker_hosts": "tcp://x:1"}.get(setting.name, "7")
            monkeypatch.setenv(setting.env, value)
            rest = minimal(name, sub)
            rest = [a for a in rest if a not in ("--sink", "s")] if setting.name == "sink" else rest
            got = getattr(parser().parse_args([name, *rest]), setting.name)
            assert got == setting.type(value), (name, setting.name)
            monkeypatch.delenv(setting.env)
    assert seen == set(SETTINGS) - set(GLOBAL), "a setting no command takes"


def test_the_plugin_takes_exactly_the_table_s_pytest_settings() -> None:
    options: dict[str, str] = {}
    inis: list[str] = []
    group = SimpleNamespace(addoption=lambda flag, dest, default, help, **_: options.update({flag: dest}))
    fake = SimpleNamespace(getgroup=lambda *a: group, addini=lambda name, *a, **k: inis.append(name))
    plugin.pytest_addoption(fake)  # type: ignore[arg-type]
    pytest_settings = [s for s in SETTINGS.values() if s.pytest]
    assert {f: d for f, d in options.items() if not d.startswith("renamed_")} == {s.flag: s.name for s in
                                                                                  pytest_settings}
    assert inis == [s.ini for s in pytest_settings]
    assert all(s.ini is None for s in SETTINGS.values() if not s.pytest)


def test_a_full_certification_is_on_three_brokers_unless_given(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The dry run shows the rows and goes through the same default as a run."""
    assert FULL_CERTIFICATION_BROKERS == MIN_BROKERS  # every broker class applies: "certified" is reachable
    for argv, environ, expected in ((["certify", "--sink", "transactional", "--dry-run"], None, "3"),
                                    (["certify", "--sink", "transactional", "--dry-run", "--quick"], None, None),
                                    (["--brokers", "1", "certify", "--sink", "transactional", "--dry-run"], None, "1"),
                                    (["certify", "--sink", "transactional", "--dry-run", "--brokers", "1"], None, "1"),
                                    (["certify", "--sink", "transactional", "--dry-run"], "2", "2")):
        monkeypatch.setenv("HARNESS_BROKERS", "restored at the end")
        monkeypatch.delenv("HARNESS_BROKERS")
        if environ:
            monkeypatch.setenv("HARNESS_BROKERS", environ)
        assert main(argv) == 0
        assert os.environ.get("HARNESS_BROKERS") == expected, argv
        assert ("kill-coordinator-txn.commit" in capsys.readouterr().out) == (expected == "3"), argv


def test_the_certification_exit_contract() -> None:
    assert certification_status([PASS] * 30, quick=False, certified=True) == 0
    assert certification_status([PASS] * 25, quick=False, certified=False) == EXIT_NOT_EVERY_CLASS
    assert certification_status([PASS] * 7, quick=True, certified=False) == 0  # says "not a certification"
    assert certification_status([PASS, UNKNOWN], quick=False, certified=False) == EXIT_INFRASTRUCTURE
    assert certification_status([PASS, UNKNOWN, INEFFECTIVE], quick=True, certified=False) == 1
    assert certification_status([FAIL, UNKNOWN], quick=False, certified=False) == 1
    assert len(set(EXIT_CODES)) == len(EXIT_CODES) == 6


def test_the_plugin_exits_by_the_same_contract() -> None:
    def report(*properties: tuple[str, object]) -> SimpleNamespace:
        return SimpleNamespace(**{PROPERTIES: list(properties)})

    unknown, failed = report((OUTCOME, UNKNOWN)), report((OUTCOME, FAIL))
    assert contract_status(1, {"failed": [unknown, unknown]}) == EXIT_INFRASTRUCTURE
    assert contract_status(1, {"failed": [unknown, failed]}) == 1
    assert contract_status(1, {"failed": [unknown, report()]}) == 1  # a test's own assertion: its failure
    assert contract_status(0, {"skipped": [report((UNTRIED, "kill-controller"))]}) == 4
    assert contract_status(0, {"skipped": [report()], "passed": [report()]}) == 0
    for pytest_s_own in (2, 4, 5):  # interrupted, a usage error, no test collected: said as pytest's on the page
        assert contract_status(pytest_s_own, {"failed": [unknown]}) == pytest_s_own
    said: list[str] = []
    stats = {"skipped": [report((UNTRIED, "kill-controller-batch.planned")), report()]}
    plugin.pytest_terminal_summary(SimpleNamespace(stats=stats, write_line=said.append))
    assert said == ["harness: not certified: 1 applicable rows need --brokers 3 (kill-controller-batch.planned)"]


def test_sink_collects_its_matrix_alone_unless_paths_are_given() -> None:
    """`pytest -m chaos --sink S` in the harness's checkout runs the sink's rows, not the checkout's own chaos
    suites (its `testpaths`); paths given on the command line are collected beside the matrix."""
    matrix, source = str(plugin.SINK_MATRIX), pytest.Config.ArgsSource
    assert plugin.sink_args(["suites"], source.TESTPATHS) == [matrix]
    assert plugin.sink_args([str(REPO)], source.INVOCATION_DIR) == [matrix]
    assert plugin.sink_args(["tests/"], source.ARGS) == ["tests/", matrix]
    assert plugin.sink_args([matrix], source.ARGS) == [matrix]
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "chaos", "--sink",
                                "transactional", "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True,
                               timeout=120)
    files = {line.split("::", 1)[0] for line in collected.stdout.splitlines() if "::" in line}
    assert files == {"harness/sink_matrix.py"}, collected.stdout[-2000:] + collected.stderr


def test_a_flink_job_s_matrix_is_collected_with_engine_and_job_and_a_sink_is_refused() -> None:
    """`pytest -m chaos --engine flink --job J` collects the job's rows (its checkpoints', not Spark's own); a sink
    or no job is bad input before anything starts."""
    def collect(*args: str) -> subprocess.CompletedProcess[str]:
        environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
        return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "chaos", "--engine",
                               "flink", *args, "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True,
                              timeout=120, env=environment)

    collected = collect("--job", "kafka_exactly_once")
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert "harness/sink_matrix.py::test_sink_scenario[kafka_exactly_once::kill-driver-checkpoint.completed]" in ids
    assert not any("speculation" in line or "batch.planned" in line or "state.committed" in line for line in ids)
    for refused, said in ((("--sink", "transactional"), "not --sink"), ((), "--job")):
        ran = collect(*refused)
        assert ran.returncode == EXIT_BAD_INPUT and said in ran.stdout + ran.stderr, ran.stdout + ran.stderr


def test_shrink_tells_shrunk_from_flaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    start = {"type": "scenario.start", "scenario": "x", "pipeline": "passthrough", "pipeline_spec": "passthrough",
             "sink": "bad_blind_commit_retry", "faults": ["kill:driver@txn.pre_commit#4"], "state_store": "hdfs",
             "speculation": False, "partitions": 4, "rate": 0.0, "max_offsets_per_trigger": 4004,
             "workload": {"records": 20000, "seed": 1}}
    (tmp_path / "history.jsonl").write_text(json.dumps(start) + "\n")
    (tmp_path / "result.json").write_text(json.dumps({"verdict": {"anomalies": {"duplicate": {}}}}))

    @contextmanager
    def fake_session(brokers: int | None = None, **_: object):
        yield SimpleNamespace(cluster=None)

    monkeypatch.setattr(shrink_command, "session", fake_session)
    monkeypatch.setattr(shrink_command, "shrink", lambda original, kinds, run: Shrunk(original, kinds))
    assert main(["shrink", str(tmp_path), "--out", str(tmp_path)]) == EXIT_FLAKY
    monkeypatch.setattr(shrink_command, "shrink", lambda original, kinds, run: Shrunk(original, kinds, original))
    monkeypatch.setattr(shrink_command, "reproducer", lambda found, report: ("test_repro_x.py", "pass\n"))
    assert main(["shrink", str(tmp_path), "--out", str(tmp_path)]) == 1
    assert (tmp_path / "test_repro_x.py").is_file()


def test_every_class_or_row_name_in_fault_says_which_steps_to_write() -> None:
    for fault in every_class():
        for name in (fault.name, fault.row):
            instead = instead_of_step(name)
            assert instead and name in instead, name
            for step in fault.faults:
                assert f"--fault '{step}'" in instead, name
                parse_schedule([step])  # what it says to write is a step
    assert instead_of_step("kill:sender@txn.commit#1") is None


def test_a_class_name_in_run_fault_is_bad_input_with_the_step() -> None:
    run = subprocess.run([sys.executable, "-m", "harness", "run", "--fault", "kill:sender@txn.commit/instant"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert run.returncode == EXIT_BAD_INPUT
    assert "--fault 'kill:sender@txn.commit#1'" in run.stderr


def test_doctor_asks_for_a_go_that_builds_toxiproxy() -> None:
    from harness.cli.doctor import go_is_new_enough

    assert go_is_new_enough("go version go1.25.0 linux/amd64") and go_is_new_enough("go version go1.26.8 linux/amd64")
    assert not go_is_new_enough("go version go1.24.9 linux/amd64") and not go_is_new_enough("")


def test_bad_input_found_by_a_run_is_exit_2_after_its_cluster_is_removed(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """What only Spark or the output shows (a sink that fails to import there) is bad input raised inside the
    session: the cluster is removed on the way out, as the exit codes page says."""
    from harness.errors import BadInput
    from harness.run import session as sessions

    removed: list[bool] = []

    class Started:
        run_id = "20261201-1"

        def __init__(self, **_: object) -> None: ...
        def __enter__(self) -> Started: return self
        def __exit__(self, *exc: object) -> None: removed.append(True)
        def save_logs(self, folder: Path) -> None: ...

    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path))
    monkeypatch.setattr(sessions.images, "build_for", lambda output, where, stack: None)
    monkeypatch.setattr(sessions, "Cluster", Started)
    monkeypatch.setattr(sessions, "write_index", lambda folder: None)
    with pytest.raises(BadInput) as raised, sessions.session():
        raise BadInput("sink 's.py:sink' or pipeline 'passthrough' failed importing in the Spark image")
    assert removed and raised.value.exit_status == EXIT_BAD_INPUT


def test_doctor_fix_s_help_names_all_it_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every package `--fix` installs, the registry binary it unpacks and the engine it starts, in its help."""
    from harness.cli import doctor

    installed: list[str] = []

    def run(argv: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        if "install" in argv:
            installed.extend(argv[argv.index("install") + 1:])
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(doctor.root_access, "current", lambda: doctor.root_access.choose(0, False, None))
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    monkeypatch.setattr(doctor.subprocess, "run", run)
    monkeypatch.setattr(doctor, "registry_binary", lambda: None)
    monkeypatch.setattr(doctor, "unpack_registry", lambda: installed.append(doctor.REGISTRY_PACKAGE))
    monkeypatch.setattr(doctor, "_engine_answers", lambda: True)
    doctor.install_engine()
    commands = argparse.ArgumentParser().add_subparsers()
    doctor.add_parser(commands)
    fix = next(a for a in commands.choices["doctor"]._actions if "--fix" in a.option_strings)
    for what in [p for p in installed if not p.startswith("-")] + ["dockerd"]:
        assert what in fix.help, what


def test_doctor_fix_installs_through_sudo_when_not_root_and_nothing_without_it(monkeypatch: pytest.MonkeyPatch,
                                                                               tmp_path: Path) -> None:
    """Not root with passwordless sudo: every apt-get and dockerd goes through `sudo -n`, and only what is
    missing is installed (a runner's own Docker is never replaced; Debian's keyring where the host lacks it, as
    Ubuntu's does); with neither root nor sudo, nothing runs."""
    from harness.cli import doctor

    commands: list[list[str]] = []
    started: list[list[str]] = []
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    monkeypatch.setattr(doctor.apt_sources, "KEYRING", tmp_path / "debian-archive-keyring.gpg")  # an Ubuntu host
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None if name == "debootstrap" else f"/usr/bin/{name}")
    monkeypatch.setattr(doctor.subprocess, "run",
                        lambda argv, **_: commands.append(argv) or subprocess.CompletedProcess(argv, 0))
    monkeypatch.setattr(doctor.subprocess, "Popen", lambda argv, **_: started.append(argv))
    monkeypatch.setattr(doctor, "registry_binary", lambda: "/usr/bin/docker-registry")
    answers = iter([False, True])
    monkeypatch.setattr(doctor, "_engine_answers", lambda: next(answers))
    monkeypatch.setattr(doctor.root_access, "current", lambda: doctor.root_access.choose(1001, True, None))
    doctor.install_engine()
    assert all(argv[:2] == ["sudo", "-n"] for argv in commands + started), commands + started
    installs = [argv[argv.index("install") + 1:] for argv in commands if "install" in argv]
    assert installs == [["-y", "-q", "debootstrap", "debian-archive-keyring"]]
    assert started == [["sudo", "-n", "dockerd"]]

    commands.clear()  # an engine elsewhere answers (a CI service): no dockerd is installed here
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    monkeypatch.setattr(doctor, "_engine_answers", lambda: True)
    doctor.install_engine()
    installs = [argv[argv.index("install") + 1:] for argv in commands if "install" in argv]
    assert installs == [["-y", "-q", "debootstrap", "debian-archive-keyring"], ["-y", "-q", "chromium"]]

    commands.clear()  # an Ubuntu host that has debootstrap: Debian's keyring all the same
    monkeypatch.setattr(doctor.shutil, "which", lambda name: f"/usr/bin/{name}")
    doctor.install_engine()
    assert [argv[argv.index("install") + 1:] for argv in commands if "install" in argv] == [
        ["-y", "-q", "debian-archive-keyring"]]

    commands.clear()  # a Debian host has it
    doctor.apt_sources.KEYRING.write_bytes(b"")
    doctor.install_engine()
    assert commands == []

    commands.clear()
    monkeypatch.setattr(doctor.root_access, "current", lambda: doctor.root_access.choose(1001, False, "none here"))
    doctor.install_engine()
    assert commands == []


def test_eo_scenario_s_faults_get_the_same_answer_as_run_s() -> None:
    """The plugin's eo_scenario checks its faults through the same parser as `run --fault`."""
    from harness.errors import BadInput
    from harness.faults.glossary import parse_steps

    with pytest.raises(BadInput, match="--fault 'kill:sender@txn.commit#1'"):
        parse_steps(["kill-sender-txn.commit"])
    with pytest.raises(BadInput, match="unknown action 'explode'"):
        parse_steps(["explode:driver@txn.commit"])
    assert [str(s) for s in parse_steps(["kill:driver@txn.commit", "then kill:driver@txn.first_write"])] == [
        "kill:driver@txn.commit", "then kill:driver@txn.first_write"]


@pytest.mark.parametrize(("argv", "said"), [
    (["run", "--records", "0"], "--records 0: a whole number from 1"),
    (["run", "--records", "-5"], "--records -5: a whole number from 1"),
    (["run", "--stall-timeout", "-1"], "--stall-timeout -1: a number of seconds above 0"),
    (["run", "--input-rate", "-3"], "--input-rate -3: 0, or records per second above 0"),
    (["certify", "--sink", "s", "--live-rate", "0"], "--live-rate 0: a number of records per second above 0"),
    (["run", "--brokers", "7"], "--brokers 7: a whole number between 1 and 5"),
    (["run", "--reports", __file__], "a file, not a folder"),
], ids=["records-0", "records-negative", "stall-timeout", "input-rate", "live-rate", "brokers", "reports-a-file"])
def test_a_value_out_of_range_is_refused_saying_the_range(argv: list[str], said: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(argv)
    assert stopped.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert said in err and len(err.splitlines()) == 1, err  # one line: the usage is --help's, which it names
    assert err.rstrip().endswith(f"(see eo-harness {argv[0]} --help)"), err


def test_an_iceberg_release_no_spark_line_knows_is_bad_input_before_anything_starts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_ICEBERG", "")  # main() sets it from the flag: restored after the test
    status = main(["certify", "--dry-run", "--sink", "transactional", "--iceberg", "1.9.0"])
    assert status == EXIT_BAD_INPUT
    assert capsys.readouterr().err.strip().endswith("Iceberg 1.9.0: not a release known for Spark 4.0 "
                                                    "(known to work: 1.11.0, 1.10.1)")
