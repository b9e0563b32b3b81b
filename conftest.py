"""The harness's pytest plugin, for every suite in this repository."""

pytest_plugins = ["harness.plugin"]
