"""The example project kept as data teams keep theirs (examples/orders_lake: a src/ layout, a sink that
imports a helper module, a third-party package and a class from a jar, and needs a Spark setting of its
own; a `cluster` fixture of its own). A plain pytest in its folder, with the harness's plugin found by its
entry point, runs its unit tests and starts no cluster. Its chaos test, the project's own function, runs on
this worker's cluster, shipping what its pyproject.toml names: a third cluster on two cores would slow
every other gate test."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.subject.dependencies import dependencies

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "orders_lake"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "orders_lake"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("reports", "__pycache__"))
    return copy


@pytest.mark.gate
def test_a_plain_pytest_runs_the_unit_tests_and_starts_no_cluster(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_") and k != "PYTHONPATH"}
    env["HARNESS_REPORTS"] = str(project / "reports")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed, 1 skipped" in done.stdout, done.stdout[-3000:]
    assert not (project / "reports").exists(), "a plain pytest started a scenario"


@pytest.fixture
def on_the_projects_path() -> Iterator[None]:
    """The project's src/ first on the path, as its pytest's `pythonpath` ini puts it; its modules forgotten after."""
    sys.path.insert(0, str(EXAMPLE / "src"))
    try:
        yield
    finally:
        sys.path.remove(str(EXAMPLE / "src"))
        for name in [m for m in sys.modules if m == "orders_lake" or m.startswith("orders_lake.")]:
            del sys.modules[name]


@pytest.mark.gate
def test_its_chaos_test_ships_the_package_jar_and_setting_and_passes(eo_scenario: Callable[..., object],
                                                                       on_the_projects_path: None,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ini = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    shipped = dependencies(requirements=str(EXAMPLE / ini["harness_requirements"]), packages=ini["harness_packages"],
                           conf=ini["harness_conf"])
    assert shipped.python and shipped.packages and shipped.conf, shipped
    monkeypatch.setenv("HARNESS_OUTPUT", ini["harness_output"])
    spec = importlib.util.spec_from_file_location("orders_lake_chaos", EXAMPLE / "tests" / "test_chaos.py")
    assert spec is not None and spec.loader is not None
    chaos = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chaos)
    project_cluster = {"name": "orders-prod"}  # its conftest's `cluster` fixture's value
    chaos.test_the_lake_survives_a_driver_kill_after_its_table_commit(
        lambda **options: eo_scenario(dependencies=shipped, **options), project_cluster)
