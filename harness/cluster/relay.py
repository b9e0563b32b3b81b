"""The relay container (harness.gate.relay): where the system under test meets the gate, where the
checkpoint volume is read, and the harness's tunnel to the run's other containers; the harness reaches it
only through its published service port, the one port of the run (with the reaper's) on the engine's
address."""

from __future__ import annotations

from pathlib import Path

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster.service import Service
from harness.gate import relay
from harness.gate.points import Peer
from harness.gate.relay_files import RelayFiles
from harness.gate.tunnel import Tunnel


def client_port(broker: int) -> int:
    """The relay's port for broker `broker` (its node id): the nth client port is the nth broker's."""
    return relay.CLIENT_PORT + broker - 1


def port_reached(peer: Peer) -> int:
    """The relay's port a client connection came in on: the remote end its container sees."""
    return relay.SERVICE_PORTS[peer.service] if peer.service in relay.SERVICE_PORTS else client_port(peer.broker)


VOLUME = relay.ROOT  # where the relay's container has the run's checkpoint volume


class Relay(Service):
    """The relay, on the run's network as `alias`, with the checkpoint volume mounted."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], checkpoints: str, brokers: int,
                 secret: str, targets: list[str], alias: str = "gate") -> None:
        super().__init__(image, alias, network, labels)
        self.brokers = brokers
        self.secret = secret  # every connection to the service port must begin with it
        self.with_env(relay.SECRET_ENV, secret)
        self.with_volume_mapping(checkpoints, VOLUME, "rw")
        self.with_published_port(relay.SERVICE_PORT)
        # no host path there; `targets`: the containers a tunnel may reach
        self.with_command(["python", "-c", Path(relay.__file__).read_text(), str(brokers), *targets])
        self.waiting_for(LogMessageWaitStrategy(relay.READY).with_startup_timeout(30))

    @property
    def service_address(self) -> tuple[str, int]:
        """Where the harness reaches the relay: the gate's control and data connections, the file operations."""
        return self.reached_at(relay.SERVICE_PORT)

    def client_address(self, broker: int) -> str:
        """Where the system under test reaches broker `broker` (its node id) through the gate, inside the network."""
        return f"{self.alias}:{client_port(broker)}"

    def service_client_address(self, service: str) -> tuple[str, int]:
        """Where the system under test reaches a service a store started (relay.SERVICE_PORTS: PostgreSQL, an
        S3 server) through the gate, inside the network."""
        return self.alias, relay.SERVICE_PORTS[service]

    def files(self) -> RelayFiles:
        return RelayFiles(*self.service_address, self.secret)

    def tunnel(self, host: str, port: int) -> Tunnel:
        """A port on this host's loopback that reaches `host:port` on the run's network (close it when done)."""
        return Tunnel(self.service_address, self.secret, host, port)
