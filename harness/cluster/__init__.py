"""The cluster: images, the containers of a run (testcontainers service classes), its reaper and labels."""

from testcontainers.core.config import ConnectionMode, testcontainers_config

# Ryuk, testcontainers' reaper, is an image that cannot be pulled here: harness.cluster.reaper does its job.
testcontainers_config.ryuk_disabled = True
# The engine is local (even when the harness itself runs in a container): published ports are on loopback.
testcontainers_config.connection_mode_override = ConnectionMode.docker_host
testcontainers_config.tc_host_override = "127.0.0.1"
