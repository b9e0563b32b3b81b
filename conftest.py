"""This repository's suites use the harness's pytest plugin: registered by its `pytest11` entry point
once the package is installed (`pip install -e .`, as run.sh does), named here for a bare checkout."""

from importlib.metadata import entry_points

if not any(ep.value == "harness.plugin" for ep in entry_points(group="pytest11")):
    pytest_plugins = ["harness.plugin"]
