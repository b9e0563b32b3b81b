"""Runs a GitHub Actions workflow of the examples as a hosted runner would, on this machine (as root, to set
the runner up): every `run:` step read from the workflow file, in order, as a user `runner` that is not root,
in the docker group, with passwordless sudo (a sudoers drop-in), and with the Python the workflow's
setup-python step names first on PATH (copied from pyenv into the runner's tool cache, as setup-python
installs one). The `uses:` steps are emulated: checkout copies the project (with a wheel of this checkout in
its vendor/), setup-python and setup-go put their tool first on PATH, upload-artifact and download-artifact
copy folders. Jobs run in the order their `needs` give, a matrix's entries one after another.

By default on a fresh Docker engine (a dockerd of its own: its own data root and socket, nothing cached,
no image): every image is built by the runner, as on a new hosted runner. `--engine shared` uses the
machine's engine instead. The user, the drop-in, the engine and its data are removed at the end.

    .venv/bin/python .ci/hosted_runner.py                                    # the payments example's chaos.yml
    .venv/bin/python .ci/hosted_runner.py --workflow examples/ci/github-shards.yml --project examples/payments \\
        --env SINK=sinks/payments_sink.py:sink
"""

from __future__ import annotations

import argparse
import fnmatch
import grp
import itertools
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's harness: its engines
USER = "runner"
SUDOERS = Path("/etc/sudoers.d/eo-harness-hosted-runner")
ENGINE = "hosted-runner"  # harness.cluster.engines: its own socket and data root
ENGINE_POOL = 7  # its address pool, apart from the other engines' (10.207.0.0/16)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # a hosted runner's PATH, before its tools
HOST_SETTINGS = re.compile(r"(^PIP_|CA_BUNDLE|CA_CERTS|CERT_FILE|CERT_DIR|CAINFO|_PROXY$)", re.I)  # the host's own
EMULATED = ("actions/checkout", "actions/setup-python", "actions/setup-go", "actions/upload-artifact",
            "actions/download-artifact")
EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


@dataclass
class Step:
    """One step of a job: a `run:` script or a `uses:` action with its `with:`."""

    name: str
    run: str | None = None
    uses: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    always: bool = False


@dataclass
class Job:
    """One job of a workflow, for one entry of its matrix."""

    name: str
    needs: list[str]
    always: bool
    timeout_minutes: float
    env: dict[str, str]
    steps: list[Step]


def jobs(workflow: dict, overrides: dict[str, str] | None = None) -> list[Job]:
    """The workflow's jobs in an order their `needs` allow, each matrix entry a job of its own, with the
    `${{ matrix.* }}` expressions put in; any other expression is refused (this runner cannot say it)."""
    defined = workflow["jobs"]
    order: list[str] = []
    while len(order) < len(defined):
        ready = [name for name, job in defined.items() if name not in order
                 and all(need in order for need in _listed(job.get("needs")))]
        if not ready:
            raise SystemExit(f"jobs whose needs form a cycle: {sorted(set(defined) - set(order))}")
        order += ready
    found = []
    for name in order:
        job = defined[name]
        matrix = job.get("strategy", {}).get("matrix", {})
        keys = sorted(matrix)
        for values in itertools.product(*(matrix[key] for key in keys)) if keys else [()]:
            entry = {f"matrix.{key}": str(value) for key, value in zip(keys, values, strict=True)}
            label = name + "".join(f" ({key}={value})" for key, value in zip(keys, values, strict=True))
            env = {key: str(value) for key, value in {**workflow.get("env", {}), **job.get("env", {})}.items()}
            env.update(overrides or {})
            steps = [Step(name=step.get("name") or step.get("uses") or step["run"].strip().splitlines()[0],
                          run=_put_in(step["run"], entry) if "run" in step else None, uses=step.get("uses"),
                          inputs={key: _put_in(str(value), entry) for key, value in step.get("with", {}).items()},
                          always=_always(step.get("if")))
                     for step in job["steps"]]
            found.append(Job(label, _listed(job.get("needs")), _always(job.get("if")),
                             float(job.get("timeout-minutes", 360)), env, steps))
    return found


def _listed(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _always(condition: str | None) -> bool:
    if condition is None:
        return False
    if condition.strip() in ("always()", "${{ always() }}"):
        return True
    raise SystemExit(f"condition {condition!r}: this runner knows only always()")


def _put_in(text: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            raise SystemExit(f"expression {match.group(0)!r}: this runner knows only a matrix's values")
        return values[match.group(1)]

    return EXPRESSION.sub(value, text)


class Runner:
    """The runner's user, its engine, and the state of one workflow's run."""

    def __init__(self, project: Path, engine: str, log: Path) -> None:
        self.project, self.engine, self.log = project, engine, log
        self.home = Path("/home") / USER
        self.artifacts = self.home / "artifacts"
        self.docker_host: str | None = None
        self.installed_sudo = False

    # the machine: a user with passwordless sudo in the docker group, and an engine
    def set_up(self) -> None:
        try:
            pwd.getpwnam(USER)
            raise SystemExit(f"a user {USER!r} exists already: not this runner's, left alone")
        except KeyError:
            pass
        if shutil.which("sudo") is None:
            say("installing sudo (a hosted runner has it) ...")
            subprocess.run(["apt-get", "install", "-y", "-q", "sudo"], check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            self.installed_sudo = True
        try:
            grp.getgrnam("docker")
        except KeyError:
            subprocess.run(["groupadd", "--system", "docker"], check=True)
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--groups", "docker", USER], check=True)
        SUDOERS.write_text(f"{USER} ALL=(ALL) NOPASSWD:ALL\n")
        SUDOERS.chmod(0o440)
        subprocess.run(["visudo", "-cf", str(SUDOERS)], check=True, stdout=subprocess.DEVNULL)
        go_env = Path.home() / ".config" / "go" / "env"  # the host's Go settings, as a runner image has its own
        if go_env.is_file():
            (self.home / ".config" / "go").mkdir(parents=True)
            shutil.copy(go_env, self.home / ".config" / "go" / "env")
        self.artifacts.mkdir()
        (self.home / "temp").mkdir()
        self._own(self.home)
        if self.engine == "fresh":
            from harness.cluster import engines

            engines.stop(ENGINE)
            shutil.rmtree(engines.DATA / ENGINE, ignore_errors=True)  # nothing cached from an earlier run
            started = subprocess.run(  # from a process of its own: dockerd is then no child of this one to reap
                [sys.executable, "-c", f"from harness.cluster import engines; print(engines.start({ENGINE!r}, "
                                       f"{ENGINE_POOL}))"],
                env={**os.environ, "PYTHONPATH": str(REPO)}, check=True, capture_output=True, text=True)
            self.docker_host = started.stdout.strip().splitlines()[-1]
            say(f"fresh engine: {self.docker_host} (data root {engines.DATA / ENGINE})")

    def tear_down(self) -> None:
        uid = _uid(USER)
        if uid is not None:
            for pid in _processes_of(uid):  # this runner's own processes, each by its id
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.engine == "fresh":
            from harness.cluster import engines

            engines.stop(ENGINE)
            shutil.rmtree(engines.DATA / ENGINE, ignore_errors=True)
            (engines.DATA / f"{ENGINE}.log").unlink(missing_ok=True)
            shutil.rmtree(engines.RUN / ENGINE, ignore_errors=True)
        if uid is not None:
            subprocess.run(["userdel", "--remove", USER], check=False, stderr=subprocess.DEVNULL)
        SUDOERS.unlink(missing_ok=True)
        if self.installed_sudo:
            say("sudo was installed for the runner and stays installed")

    # a job
    def run_job(self, job: Job, python: str | None) -> bool:
        """Run `job`'s steps; whether every step that ran passed."""
        workspace = self.home / "work" / re.sub(r"[^A-Za-z0-9_.-]+", "-", job.name).strip("-")
        if workspace.exists():
            shutil.rmtree(workspace)
        path = [PATH]
        env = {"HOME": str(self.home), "USER": USER, "LOGNAME": USER, "SHELL": "/bin/bash", "LANG": "C.UTF-8",
               "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
               "RUNNER_TEMP": str(self.home / "temp"),
               **{key: value for key, value in os.environ.items() if HOST_SETTINGS.search(key)}, **job.env}
        if self.docker_host:
            env["DOCKER_HOST"] = self.docker_host
        deadline = time.monotonic() + job.timeout_minutes * 60
        failed = False
        say(f"job {job.name}")
        for index, step in enumerate(job.steps, 1):
            if failed and not step.always:
                say(f"  step {index} {step.name}: skipped (an earlier step failed)")
                continue
            started = time.monotonic()
            try:
                ok = self._step(step, workspace, env, path, deadline, python)
            except StepFailed as failure:
                say(f"    {failure}")
                ok = False
            say(f"  step {index} {step.name}: {'passed' if ok else 'FAILED'} in {_took(time.monotonic() - started)}")
            failed = failed or not ok
        return not failed

    def _step(self, step: Step, workspace: Path, env: dict[str, str], path: list[str], deadline: float,
              python: str | None) -> bool:
        if step.run is not None:
            return self._run(step.run, workspace, {**env, "PATH": ":".join(path)}, deadline)
        action = (step.uses or "").split("@")[0]
        if action == "actions/checkout":
            self._checkout(workspace)
        elif action == "actions/setup-python":
            bin_folder, lib = self._setup_python(python or step.inputs["python-version"])
            path.insert(0, bin_folder)
            env["LD_LIBRARY_PATH"] = lib  # as setup-python exports it on Linux (its Pythons link libpython)
            env["pythonLocation"] = str(Path(bin_folder).parent)
        elif action == "actions/setup-go":
            path.insert(0, _setup_go(step.inputs["go-version"]))
        elif action == "actions/upload-artifact":
            self._upload(step.inputs["name"], step.inputs["path"], workspace)
        elif action == "actions/download-artifact":
            self._download(step.inputs["pattern"], step.inputs["path"], workspace)
        else:
            raise StepFailed(f"{step.uses}: not an action this runner emulates ({', '.join(EMULATED)})")
        return True

    def _run(self, script: str, workspace: Path, env: dict[str, str], deadline: float) -> bool:
        """`script` as GitHub runs a step's (bash -e), as the runner user, in the workspace."""
        for line in script.strip().splitlines():
            say(f"    $ {line}")
        with tempfile.NamedTemporaryFile("w", suffix=".sh", dir=self.home / "temp", delete=False) as file:
            file.write(script)
        self._own(Path(file.name))
        command = ["runuser", "-u", USER, "--", "env", "-i", *[f"{k}={v}" for k, v in env.items()],
                   "bash", "-e", file.name]
        with self.log.open("ab") as log:
            process = subprocess.Popen(command, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            assert process.stdout is not None
            for line in process.stdout:  # the step's output, shown and kept
                sys.stdout.buffer.write(line)
                sys.stdout.flush()
                log.write(line)
                if time.monotonic() > deadline:
                    os.killpg(process.pid, signal.SIGKILL)
                    raise StepFailed("the job's timeout-minutes ran out")
            status = process.wait()
        if status != 0:
            raise StepFailed(f"exit status {status}")
        return True

    def _checkout(self, workspace: Path) -> None:
        """The project as a clone of its repository would have it, with a wheel of this checkout in vendor/
        (what the examples commit there)."""
        shutil.copytree(self.project, workspace, ignore=shutil.ignore_patterns("reports", "vendor", "__pycache__"))
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / "source"  # a copy: a build/ folder of the checkout must not leak into the wheel
            shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
                ".git", "build", "reports", "*.egg-info", ".*cache", ".hypothesis", "__pycache__", ".venv", "site"))
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(workspace / "vendor"),
                            str(source)], check=True)
        self._own(workspace)

    def _setup_python(self, version: str) -> tuple[str, str]:
        """A Python of `version` (3.12: pyenv's newest 3.12.x) copied into the runner's tool cache."""
        root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
        candidates = sorted((p for p in root.glob(f"{version}.*") if p.name.count(".") == 2),
                            key=lambda p: tuple(int(n) for n in p.name.split(".")))
        if not candidates:
            raise StepFailed(f"no Python {version} in {root}")
        source = candidates[-1]
        target = self.home / "hostedtoolcache" / "Python" / source.name / "x64"
        if not target.exists():
            shutil.copytree(source, target, symlinks=True)
            for script in (target / "bin").iterdir():  # pip and the like name their interpreter by its old place
                if script.is_file() and not script.is_symlink() and script.read_bytes()[:2] == b"#!":
                    text = script.read_bytes()
                    script.write_bytes(text.replace(str(source).encode(), str(target).encode(), 1))
            self._own(self.home / "hostedtoolcache")
        say(f"    Python {source.name} (from {source}) at {target}")
        return str(target / "bin"), str(target / "lib")

    def _upload(self, name: str, paths: str, workspace: Path) -> None:
        folder = self.artifacts / name
        for entry in paths.split():
            for found in workspace.glob(entry.rstrip("/")):
                destination = folder / found.relative_to(workspace)
                if found.is_dir():
                    shutil.copytree(found, destination, dirs_exist_ok=True)
                else:
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(found, destination)
        say(f"    artifact {name}: {sum(1 for p in folder.rglob('*') if p.is_file()) if folder.exists() else 0} files")

    def _download(self, pattern: str, path: str, workspace: Path) -> None:
        for artifact in sorted(self.artifacts.iterdir()):
            if fnmatch.fnmatch(artifact.name, pattern):
                shutil.copytree(artifact, workspace / path / artifact.name, dirs_exist_ok=True)
        self._own(workspace)

    def _own(self, path: Path) -> None:
        subprocess.run(["chown", "-R", f"{USER}:{USER}", str(path)], check=True)


class StepFailed(Exception):
    """A step that did not pass, and why."""


def _setup_go(version: str) -> str:
    """The folder of a Go this machine has that `version` takes (">=1.25": 1.25 or later; "1.25": any 1.25.x),
    as setup-go puts the one it finds in its tool cache on PATH."""
    at_least = version.startswith(">=")
    wanted = tuple(int(n) for n in version.removeprefix(">=").split(".")[:2])
    for folder in [*os.environ.get("PATH", "").split(":"), "/usr/local/go/bin"]:
        go = Path(folder) / "go"
        if go.is_file():
            found = re.search(r"\bgo(\d+)\.(\d+)", subprocess.run([str(go), "version"], capture_output=True,
                                                                   text=True).stdout)
            have = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
            if have == wanted or (at_least and have > wanted):
                return folder
    raise StepFailed(f"no Go {version} on this machine")


def _uid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except FileNotFoundError:
                pass
    return found


def _took(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s" if seconds >= 60 else f"{seconds:.1f} s"


def say(message: str) -> None:
    print(f"[hosted-runner] {message}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workflow", type=Path, default=REPO / "examples/payments/.github/workflows/chaos.yml")
    parser.add_argument("--project", type=Path, help="the repository the workflow checks out (default: the folder "
                                                      "holding its .github/, else examples/payments)")
    parser.add_argument("--engine", choices=("fresh", "shared"), default="fresh",
                        help="fresh: a dockerd of its own, no image in it (default); shared: this machine's engine")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="set a workflow env value (a template's SINK)")
    parser.add_argument("--python", help="another Python than the workflow's setup-python names (a minor: 3.13)")
    parser.add_argument("--log", type=Path, default=Path("hosted-runner.log"), help="every step's output")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run as root: it makes the runner's user, its sudoers drop-in and its engine")
    workflow_path = args.workflow.resolve()
    project = (args.project or (workflow_path.parents[2] if workflow_path.parent.name == "workflows"
                                else REPO / "examples" / "payments")).resolve()
    overrides = dict(pair.split("=", 1) for pair in args.env)
    planned = jobs(yaml.safe_load(workflow_path.read_text()), overrides)
    args.log.write_bytes(b"")
    runner = Runner(project, args.engine, args.log.resolve())
    started = time.monotonic()
    results: dict[str, bool] = {}
    try:
        runner.set_up()
        say(f"set up in {_took(time.monotonic() - started)}")
        for job in planned:
            needed = [ok for name, ok in results.items() if name.split(" (")[0] in job.needs]
            if not all(needed) and not job.always:
                say(f"job {job.name}: skipped (a job it needs failed)")
                continue
            job_started = time.monotonic()
            results[job.name] = runner.run_job(job, args.python)
            say(f"job {job.name}: {'passed' if results[job.name] else 'FAILED'} in "
                f"{_took(time.monotonic() - job_started)}")
    finally:
        runner.tear_down()
    passed = bool(results) and all(results.values())
    say(f"{workflow_path.relative_to(REPO) if workflow_path.is_relative_to(REPO) else workflow_path}: "
        f"{'passed' if passed else 'FAILED'} in {_took(time.monotonic() - started)} ({args.engine} engine)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
