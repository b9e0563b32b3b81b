"""Runs a GitHub Actions workflow of the examples as a hosted runner would, on this machine (as root, to set
the runner up): every `run:` step read from the workflow file, in order, as a user `runner` that is not root,
in the docker group, with passwordless sudo (a sudoers drop-in), and with the Python the workflow's
setup-python step names first on PATH (copied from pyenv into the runner's tool cache, as setup-python
installs one). The `uses:` steps are emulated: checkout copies the project (with a wheel of this checkout in
its vendor/), setup-python and setup-go put their tool first on PATH, upload-artifact and download-artifact
copy folders. Jobs run in the order their `needs` give, a matrix's entries one after another. A repository
variable (`${{ vars.NAME }}`, as in a job's `env:`) is NAME of this runner's own environment, empty when unset.

By default on a fresh Docker engine (a dockerd of its own: its own data root and socket, nothing cached,
no image): every image is built by the runner, as on a new hosted runner. `--engine shared` uses the
machine's engine instead. The user, the drop-in, the engine and its data are removed at the end.

A GitLab CI file (no `jobs:` key) runs as GitLabRunner says: its jobs' script lines in the job image's
Python without the build tools, docker:dind an isolated engine over TLS, the images from a registry.

    .venv/bin/python .ci/hosted_runner.py                                    # the payments example's chaos.yml
    .venv/bin/python .ci/hosted_runner.py --workflow examples/payments/.gitlab-ci.yml
    .venv/bin/python .ci/hosted_runner.py --workflow examples/ci/github-shards.yml --project examples/payments \\
        --env SINK=sinks/payments_sink.py:sink
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import grp
import itertools
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's harness: its engines
USER = "runner"
SUDOERS = Path("/etc/sudoers.d/eo-harness-hosted-runner")
ENGINE = "hosted-runner"  # harness.cluster.engines: its own socket and data root
ENGINE_POOL = 7  # its address pool, apart from the other engines' (10.207.0.0/16)
GITLAB_ENGINE, GITLAB_ENGINE_INDEX = "gitlab-dind", 6  # the isolated engine of a GitLab job's docker:dind
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
    image: str | None = None  # GitLab: the job's image (python:3.12-bookworm: that Python, no build tools)
    services: list[str] = field(default_factory=list)  # GitLab: docker:dind, an engine over TLS
    artifacts: list[str] = field(default_factory=list)  # GitLab: paths kept for the jobs that need this one


def jobs(workflow: dict, overrides: dict[str, str] | None = None,
         variables: Mapping[str, str] = os.environ) -> list[Job]:
    """The workflow's jobs in an order their `needs` allow, each matrix entry a job of its own, with the
    `${{ matrix.* }}` and `${{ vars.NAME }}` expressions put in (a repository variable: NAME from `variables`,
    this runner's own environment, empty when unset as GitHub says an unset one); any other expression is
    refused (this runner cannot say it)."""
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
            known = {**entry, **{f"vars.{variable}": value for variable, value in variables.items()}}
            env = {key: _put_in(str(value), known)
                   for key, value in {**workflow.get("env", {}), **job.get("env", {})}.items()}
            env.update(overrides or {})
            steps = [Step(name=step.get("name") or step.get("uses") or step["run"].strip().splitlines()[0],
                          run=_put_in(step["run"], known) if "run" in step else None, uses=step.get("uses"),
                          inputs={key: _put_in(str(value), known) for key, value in step.get("with", {}).items()},
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
        name = match.group(1)
        if re.fullmatch(r"vars\.\w+", name):
            return values.get(name, "")  # an unset repository variable is empty
        if name not in values:
            raise SystemExit(f"expression {match.group(0)!r}: this runner knows only a matrix's values and "
                             "vars.NAME (its own environment's NAME)")
        return values[name]

    return EXPRESSION.sub(value, text)


def gitlab_jobs(config: dict, overrides: dict[str, str] | None = None) -> list[Job]:
    """A GitLab CI file's jobs in the order of their stages, a `parallel: N` job as N jobs (CI_NODE_INDEX of
    CI_NODE_TOTAL), each line of its `script` a step (GitLab stops a job at its first failing line)."""
    stages = config.get("stages", ["build", "test", "deploy"])
    defined = {name: job for name, job in config.items() if isinstance(job, dict) and "script" in job}
    found = []
    for name in sorted(defined, key=lambda job: stages.index(defined[job].get("stage", "test"))):
        job = defined[name]
        total = int(job.get("parallel", 1))
        for index in range(1, total + 1):
            nodes = {"CI_NODE_INDEX": str(index), "CI_NODE_TOTAL": str(total)} if "parallel" in job else {}
            env = {key: str(value) for key, value in {**config.get("variables", {}), **job.get("variables", {}),
                                                      **nodes}.items()}
            env.update(overrides or {})
            services = [service["name"] if isinstance(service, dict) else service
                        for service in job.get("services", [])]
            timeout = re.fullmatch(r"(?:(\d+)h)?\s*(?:(\d+)m)?", str(job.get("timeout", "1h")).replace(" ", ""))
            minutes = float(int(timeout.group(1) or 0) * 60 + int(timeout.group(2) or 0)) if timeout else 60.0
            found.append(Job(f"{name} ({index}/{total})" if "parallel" in job else name, _listed(job.get("needs")),
                             job.get("when") == "always", minutes, env,
                             [Step(name=line.strip().splitlines()[0], run=line) for line in job["script"]],
                             image=job.get("image"), services=services,
                             artifacts=list(job.get("artifacts", {}).get("paths", []))))
    return found


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
        _run_script(script, workspace, env, deadline, self.log, self.home / "temp", user=USER)
        return True

    def _checkout(self, workspace: Path) -> None:
        checkout(self.project, workspace)
        self._own(workspace)

    def _setup_python(self, version: str) -> tuple[str, str]:
        found = copy_python(version, self.home / "hostedtoolcache" / "Python")
        self._own(self.home / "hostedtoolcache")
        return found

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


class GitLabRunner:
    """A GitLab job as a runner with Docker-in-Docker over TLS runs it: its script as root (the job image's
    user) with that image's Python (python:3.12-bookworm: pyenv's 3.12) and none of the image build's tools
    on PATH; `docker:dind` an isolated engine (harness.cluster.isolated_engine: its own network and mount
    namespaces, TCP with TLS, no image), its DOCKER_HOST and DOCKER_CERT_PATH given for the service's; and
    HARNESS_REGISTRY a registry on this host (Debian's, its storage removed at the end), filled by
    `eo-harness images push` from this machine's engine (built there first where missing)."""

    HIDDEN_TOOLS = {"java", "javac", "mvn", "go", "gofmt", "debootstrap", "mmdebstrap", "docker", "dockerd",
                    "chromium", "sudo"}

    def __init__(self, project: Path, log: Path) -> None:
        self.project, self.log = project, log
        self.work = Path(tempfile.mkdtemp(prefix="eo-harness-gitlab-"))
        self.artifacts = self.work / "artifacts"
        self.engine_env: dict[str, str] = {}
        self.registry: str | None = None
        self._registry_process: subprocess.Popen[bytes] | None = None
        self._forwarder: object = None

    def set_up(self) -> None:
        from harness.cli.doctor import registry_binary
        from harness.cluster import isolated_engine

        binary = registry_binary()
        if binary is None:
            raise SystemExit("no docker-registry binary: `python -m harness doctor --fix` unpacks Debian's")
        port = _free_port()
        here = isolated_engine.address(GITLAB_ENGINE_INDEX)[0]
        isolated_engine.stop(GITLAB_ENGINE)
        shutil.rmtree(isolated_engine.DATA / GITLAB_ENGINE, ignore_errors=True)
        started = subprocess.run(  # a process of its own: dockerd is then no child of this one
            [sys.executable, "-c", "import json; from harness.cluster import isolated_engine; print(json.dumps("
                                   f"isolated_engine.start({GITLAB_ENGINE!r}, {GITLAB_ENGINE_INDEX}, "
                                   f"({here + ':' + str(port)!r},))))"],
            env={**os.environ, "PYTHONPATH": str(REPO)}, check=True, capture_output=True, text=True)
        self.engine_env = json.loads(started.stdout.strip().splitlines()[-1])
        config = self.work / "registry.yml"
        config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: "
                          f"{self.work / 'registry'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
        with (self.work / "registry.log").open("wb") as out:
            self._registry_process = subprocess.Popen([binary, "serve", str(config)], stdout=out, stderr=out)
        self._forwarder = _forward((here, port), ("127.0.0.1", port))  # the engine reaches only this host's end
        say(f"dind: the isolated engine {self.engine_env['DOCKER_HOST']} (TLS); registry 127.0.0.1:{port}, "
            f"at {here}:{port} for the engine")
        pushing = time.monotonic()
        environment = {key: value for key, value in os.environ.items() if not key.startswith("DOCKER_")}
        subprocess.run([sys.executable, "-m", "harness", "images", "push", f"127.0.0.1:{port}/eo"], check=True,
                       env={**environment, "PYTHONPATH": str(REPO)}, cwd=REPO)
        say(f"images pushed from this machine's engine in {_took(time.monotonic() - pushing)}")
        self.registry = f"{here}:{port}/eo"
        self.artifacts.mkdir()

    def tear_down(self) -> None:
        from harness.cluster import isolated_engine

        isolated_engine.stop(GITLAB_ENGINE)
        shutil.rmtree(isolated_engine.DATA / GITLAB_ENGINE, ignore_errors=True)
        (isolated_engine.DATA / f"{GITLAB_ENGINE}.log").unlink(missing_ok=True)
        shutil.rmtree(isolated_engine.RUN / GITLAB_ENGINE, ignore_errors=True)
        if self._registry_process is not None:
            self._registry_process.terminate()
            self._registry_process.wait(timeout=30)
        shutil.rmtree(self.work, ignore_errors=True)

    def run_job(self, job: Job, python: str | None) -> bool:
        workspace = self.work / "builds" / re.sub(r"[^A-Za-z0-9_.-]+", "-", job.name).strip("-")
        checkout(self.project, workspace)
        for needed in job.needs:  # the artifacts of the jobs it needs
            for artifact in sorted(self.artifacts.glob(f"{needed}*")):
                shutil.copytree(artifact, workspace, dirs_exist_ok=True)
        image = re.fullmatch(r"python:(\d+\.\d+)(-\w+)?", job.image or "")
        if image is None:
            raise SystemExit(f"job {job.name}: image {job.image!r}; this runner knows python:<version>-<debian>")
        bin_folder, lib = copy_python(python or image.group(1), self.work / "python")
        tools = self.work / "bin"
        if not tools.exists():
            tools.mkdir()
            for folder in ("/usr/sbin", "/usr/bin", "/sbin", "/bin"):
                for program in Path(folder).iterdir():
                    if program.name not in self.HIDDEN_TOOLS and not (tools / program.name).exists():
                        (tools / program.name).symlink_to(program)
        home = self.work / "home"
        home.mkdir(exist_ok=True)
        env = {"HOME": str(home), "USER": "root", "LANG": "C.UTF-8", "PATH": f"{bin_folder}:{tools}",
               "LD_LIBRARY_PATH": lib, "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(workspace),
               **{key: value for key, value in os.environ.items() if HOST_SETTINGS.search(key)}, **job.env}
        if "docker:dind" in job.services:
            env.update(DOCKER_HOST=self.engine_env["DOCKER_HOST"], DOCKER_CERT_PATH=self.engine_env["DOCKER_CERT_PATH"])
        if self.registry is not None:
            env["HARNESS_REGISTRY"] = self.registry  # the project's CI/CD variable
        deadline = time.monotonic() + job.timeout_minutes * 60
        say(f"job {job.name} ({job.image}, services: {', '.join(job.services) or 'none'})")
        failed = False
        for index, step in enumerate(job.steps, 1):
            if failed:
                say(f"  line {index} {step.name}: skipped (an earlier line failed)")
                continue
            started = time.monotonic()
            try:
                _run_script(step.run or "", workspace, env, deadline, self.log, self.work, user=None)
                ok = True
            except StepFailed as failure:
                say(f"    {failure}")
                ok = False
            say(f"  line {index} {step.name}: {'passed' if ok else 'FAILED'} in {_took(time.monotonic() - started)}")
            failed = not ok
        for pattern in job.artifacts:  # when: always
            expanded = re.sub(r"\$(\w+)", lambda name: env.get(name.group(1), name.group(0)), pattern)
            for found in workspace.glob(expanded.rstrip("/")):
                target = self.artifacts / job.name / found.relative_to(workspace)
                if found.is_dir():
                    shutil.copytree(found, target, dirs_exist_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(found, target)
        return not failed


class StepFailed(Exception):
    """A step that did not pass, and why."""


def checkout(project: Path, workspace: Path) -> None:
    """The project as a clone of its repository would have it, with a wheel of this checkout in vendor/
    (what the examples commit there)."""
    shutil.copytree(project, workspace, ignore=shutil.ignore_patterns("reports", "vendor", "__pycache__"))
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source"  # a copy: a build/ folder of the checkout must not leak into the wheel
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
            ".git", "build", "reports", "*.egg-info", ".*cache", ".hypothesis", "__pycache__", ".venv", "site"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(workspace / "vendor"),
                        str(source)], check=True)


def copy_python(version: str, cache: Path) -> tuple[str, str]:
    """A Python of `version` (3.12: pyenv's newest 3.12.x) copied into `cache`: its bin and lib folders."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = sorted((p for p in root.glob(f"{version}.*") if p.name.count(".") == 2),
                        key=lambda p: tuple(int(n) for n in p.name.split(".")))
    if not candidates:
        raise StepFailed(f"no Python {version} in {root}")
    source = candidates[-1]
    target = cache / source.name / "x64"
    if not target.exists():
        shutil.copytree(source, target, symlinks=True)
        for script in (target / "bin").iterdir():  # pip and the like name their interpreter by its old place
            if script.is_file() and not script.is_symlink() and script.read_bytes()[:2] == b"#!":
                text = script.read_bytes()
                script.write_bytes(text.replace(str(source).encode(), str(target).encode(), 1))
    say(f"    Python {source.name} (from {source}) at {target}")
    return str(target / "bin"), str(target / "lib")


def _run_script(script: str, workspace: Path, env: dict[str, str], deadline: float, log_path: Path, temp: Path,
                user: str | None) -> None:
    """`script` with `bash -e` in `workspace`, in `env` alone, as `user` (None: as root); its output shown
    and kept in `log_path`; StepFailed when it fails or the deadline passes."""
    for line in script.strip().splitlines():
        say(f"    $ {line}")
    with tempfile.NamedTemporaryFile("w", suffix=".sh", dir=temp, delete=False) as file:
        file.write(script)
    if user is not None:
        shutil.chown(file.name, user, user)
    command = [*(["runuser", "-u", user, "--"] if user else []), "env", "-i",
               *[f"{k}={v}" for k, v in env.items()], "bash", "-e", file.name]
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        assert process.stdout is not None
        for line in process.stdout:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            log.write(line)
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                raise StepFailed("the job's timeout ran out")
        status = process.wait()
    if status != 0:
        raise StepFailed(f"exit status {status}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _forward(listen: tuple[str, int], target: tuple[str, int]) -> threading.Thread:
    """Connections to `listen` passed on to `target`, in a daemon thread, for as long as this process runs."""
    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    async def serve() -> None:
        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            target_reader, target_writer = await asyncio.open_connection(*target)
            await asyncio.gather(pipe(reader, target_writer), pipe(target_reader, writer), return_exceptions=True)

        server = await asyncio.start_server(connected, *listen)
        async with server:
            await server.serve_forever()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True, name="forward")
    thread.start()
    return thread


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
                                else workflow_path.parent if workflow_path.name == ".gitlab-ci.yml"
                                else REPO / "examples" / "payments")).resolve()
    overrides = dict(pair.split("=", 1) for pair in args.env)
    config = yaml.safe_load(workflow_path.read_text())
    gitlab = "jobs" not in config  # GitHub's workflows have `jobs:`; GitLab's jobs are top-level keys
    planned = gitlab_jobs(config, overrides) if gitlab else jobs(config, overrides)
    args.log.write_bytes(b"")
    runner: Runner | GitLabRunner = (GitLabRunner(project, args.log.resolve()) if gitlab
                                     else Runner(project, args.engine, args.log.resolve()))
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
    engine = "an isolated engine over TLS, images from a registry" if gitlab else f"{args.engine} engine"
    say(f"{workflow_path.relative_to(REPO) if workflow_path.is_relative_to(REPO) else workflow_path}: "
        f"{'passed' if passed else 'FAILED'} in {_took(time.monotonic() - started)} ({engine})")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
