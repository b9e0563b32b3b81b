"""The CI examples as the harness's own CI runs them (.ci/hosted_runner.py): every GitHub workflow's jobs
read in the order their `needs` give, a matrix's entries expanded into its `run:` steps, a repository
variable taken from the runner's own environment, and no step the runner cannot run as written (an action
it does not emulate, an expression it cannot say); a host Python of the harness's range other than 3.11,
as on a hosted runner."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = [REPO / "examples/payments/.github/workflows/chaos.yml", REPO / "examples/ci/github-shards.yml"]


def _runner():
    spec = importlib.util.spec_from_file_location("hosted_runner", REPO / ".ci" / "hosted_runner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hosted_runner"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_every_step_of_a_github_workflow_is_one_the_hosted_runner_runs_as_written(workflow: Path) -> None:
    runner = _runner()
    jobs = runner.jobs(yaml.safe_load(workflow.read_text()), {"SINK": "sinks/payments_sink.py:sink"})
    assert jobs
    for job in jobs:
        actions = [step.uses.split("@")[0] for step in job.steps if step.uses]
        assert set(actions) <= set(runner.EMULATED), job.name
        assert actions[:2] == ["actions/checkout", "actions/setup-python"], job.name
        python = next(step.inputs["python-version"] for step in job.steps if step.uses.startswith("actions/setup-py"))
        assert python in ("3.12", "3.13"), f"{job.name}: a hosted runner's Python, of the harness's 3.11 to 3.13"
        runs = [step.run for step in job.steps if step.run is not None]
        assert runs[0].startswith("pip install vendor/eo_harness-*.whl"), job.name
        assert all("${{" not in run for run in runs), job.name


def test_a_matrix_becomes_one_job_per_entry_with_its_values_put_in_and_needs_ordered() -> None:
    runner = _runner()
    jobs = runner.jobs(yaml.safe_load((REPO / "examples/ci/github-shards.yml").read_text()), {"SINK": "s.py:sink"})
    assert [job.name for job in jobs] == [f"shard (shard={k})" for k in range(1, 5)] + ["merge"]
    assert "--shard 3/$SHARDS --out shard-3/certificate" in jobs[2].steps[-2].run
    assert jobs[-1].needs == ["shard"] and jobs[-1].always and jobs[0].env["SINK"] == "s.py:sink"


def test_a_repository_variable_is_the_runner_s_own_environment_s_and_empty_when_unset() -> None:
    """GitHub says an unset `vars.NAME` as empty: the harness then reads the runner's own apt sources."""
    runner = _runner()
    workflow = {"env": {"W": "${{ vars.W }}"},
                "jobs": {"a": {"env": {"M": "${{ vars.M }}", "N": "${{ vars.N }}"}, "steps": [{"run": "echo $M"}]}}}
    job, = runner.jobs(workflow, {"N": "given"}, variables={"M": "http://127.0.0.1:3142/debian", "W": "w"})
    assert job.env == {"W": "w", "M": "http://127.0.0.1:3142/debian", "N": "given"}
    assert runner.jobs(workflow, variables={})[0].env == {"W": "", "M": "", "N": ""}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_on_an_ubuntu_runner_the_debian_mirror_comes_from_a_repository_variable(workflow: Path) -> None:
    runner = _runner()
    variables = {"HARNESS_DEBIAN_MIRROR": "http://127.0.0.1:3142/debian"}
    for job in runner.jobs(yaml.safe_load(workflow.read_text()), {"SINK": "s.py:sink"}, variables=variables):
        if any("images build" in (step.run or "") for step in job.steps):
            assert job.env["HARNESS_DEBIAN_MIRROR"] == "http://127.0.0.1:3142/debian", job.name
            assert job.env["HARNESS_DEBIAN_SECURITY_MIRROR"] == "", job.name


def test_what_the_runner_cannot_say_is_refused_not_guessed() -> None:
    runner = _runner()
    workflow = {"jobs": {"a": {"steps": [{"run": "echo ${{ secrets.TOKEN }}"}]}}}
    with pytest.raises(SystemExit, match="knows only a matrix's values"):
        runner.jobs(workflow)
    with pytest.raises(SystemExit, match="knows only a matrix's values"):
        runner.jobs({"jobs": {"a": {"env": {"T": "${{ secrets.TOKEN }}"}, "steps": []}}})
    with pytest.raises(SystemExit, match="knows only always"):
        runner.jobs({"jobs": {"a": {"if": "github.event_name == 'push'", "steps": []}}})


@pytest.mark.parametrize("file", [REPO / "examples/payments/.gitlab-ci.yml", REPO / "examples/ci/gitlab-shards.yml"],
                         ids=lambda path: path.name)
def test_a_gitlab_job_runs_in_python_3_12_and_takes_its_images_from_the_registry(file: Path) -> None:
    """python:3.12-bookworm has no Java, Maven, Go or debootstrap: a job that starts clusters checks with
    `doctor` (exit 3 when an image can be neither pulled nor built) and pulls with `images build`; none asks
    `doctor --fix` to install a build it cannot run."""
    runner = _runner()
    jobs = runner.gitlab_jobs(yaml.safe_load(file.read_text()), {"SINK": "sinks/payments_sink.py:sink"})
    assert jobs
    for job in jobs:
        assert job.image == "python:3.12-bookworm", job.name
        lines = [step.run for step in job.steps]
        assert lines[0].startswith("pip install vendor/eo_harness-*.whl") and not any("--fix" in line for line in lines)
        if any("certify --sink" in line or "pytest" in line for line in lines):
            assert lines.index("eo-harness doctor") < lines.index("eo-harness images build"), job.name
            assert job.services == ["docker:dind"] and job.env["DOCKER_TLS_VERIFY"] == "1", job.name
