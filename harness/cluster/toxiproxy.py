"""toxiproxy in a container, with its control API published for the harness, driven through toxiproxy-python."""

from __future__ import annotations

from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import HttpWaitStrategy
from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy

from harness.cluster.service import Service

API_PORT = 8474


class ToxiproxyServer(Service):
    """The L4 fault injector between the system under test and the broker."""

    def __init__(self, image: str, network: Network, labels: dict[str, str], alias: str = "toxiproxy") -> None:
        super().__init__(image, alias, network, labels)
        self.with_published_port(API_PORT)
        self.waiting_for(HttpWaitStrategy(API_PORT, "/version").with_startup_timeout(30))

    def client(self) -> Toxiproxy:
        """A toxiproxy-python client aimed at this server.

        toxiproxy-python keeps the server address in a class attribute; one server per process.
        """
        client = Toxiproxy()
        client.update_api_consumer(*self.reached_at(API_PORT))
        return client

    def proxy(self, name: str, listen_port: int, upstream: str) -> Proxy:
        """Create (or replace) a proxy listening on `listen_port` inside this container."""
        client = self.client()
        existing = client.get_proxy(name)
        if existing is not None:
            client.destroy(existing)
        return client.create(upstream=upstream, name=name, listen=f"0.0.0.0:{listen_port}", enabled=True)
