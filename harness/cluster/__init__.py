"""The cluster: images, the containers of a run (testcontainers service classes), its reaper and labels."""

from testcontainers.core.config import ConnectionMode, testcontainers_config

# Ryuk, testcontainers' reaper, is an image that cannot be pulled here: harness.cluster.reaper does its job.
testcontainers_config.ryuk_disabled = True
# Published ports are reached on the engine's host (harness.cluster.engine.engine_host: 127.0.0.1 for a
# local engine, even when the harness itself runs in a container), set per cluster.
testcontainers_config.connection_mode_override = ConnectionMode.docker_host
