"""toxiproxy in a container, its control API reached through a tunnel of the run's relay (never published:
it has no authentication), driven through toxiproxy-python."""

from __future__ import annotations

import time

import requests
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy
from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy

from harness.cluster.service import Service
from harness.errors import NotReady

API_PORT = 8474
STARTED = "Starting Toxiproxy HTTP server"  # its log line as the API starts to listen
API_WAIT_S = 30.0


class ToxiproxyServer(Service):
    """The L4 fault injector between the system under test and the broker."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], alias: str = "toxiproxy") -> None:
        super().__init__(image, alias, network, labels)
        self.api: tuple[str, int] | None = None  # where this process reaches the API (a relay tunnel's port)
        self.waiting_for(LogMessageWaitStrategy(STARTED).with_startup_timeout(30))

    def with_api(self, address: tuple[str, int]) -> ToxiproxyServer:
        self.api = address
        return self

    def start(self) -> ToxiproxyServer:
        """Start; ready once the API answers through the tunnel (its log line comes just before it listens)."""
        super().start()
        deadline = time.monotonic() + API_WAIT_S
        while True:
            try:
                self.client().version()
                return self
            except requests.RequestException as error:
                if time.monotonic() > deadline:
                    raise NotReady(f"toxiproxy's API did not answer through the relay within {API_WAIT_S:g} s: "
                                   f"{error}") from None
                time.sleep(0.2)

    def client(self) -> Toxiproxy:
        """A toxiproxy-python client aimed at this server.

        toxiproxy-python keeps the server address in a class attribute; one server per process.
        """
        if self.api is None:
            raise NotReady("toxiproxy's API has no tunnel yet (Cluster.start opens it)")
        client = Toxiproxy()
        client.update_api_consumer(*self.api)
        return client

    def proxy(self, name: str, listen_port: int, upstream: str) -> Proxy:
        """Create (or replace) a proxy listening on `listen_port` inside this container."""
        client = self.client()
        existing = client.get_proxy(name)
        if existing is not None:
            client.destroy(existing)
        return client.create(upstream=upstream, name=name, listen=f"0.0.0.0:{listen_port}", enabled=True)
