"""A tunnel the harness owns, through the run's relay: a port on this host's loopback whose connections go
on, over the relay's published port and with the run's secret, to one port of one of the run's
containers (a Kafka node's direct listener, toxiproxy's API). What only the harness needs is so reached
without being published on the engine's address, as `ssh -L` would, without an ssh server."""

from __future__ import annotations

import socket
import socketserver
import threading

from harness.gate.relay import keep_alive

CHUNK = 65536


def through_relay(relay: tuple[str, int], secret: str, host: str, port: int) -> socket.socket:
    """A connection to `host:port` on the run's network, through the relay (which closes it when `host` is
    not one of the run's containers or does not answer)."""
    connection = socket.create_connection(relay, timeout=30)
    keep_alive(connection)
    connection.settimeout(None)
    connection.sendall(f"{secret} connect {host} {port}\n".encode())
    return connection


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until `source` ends, then end `sink`'s writing side (the other direction goes on until it ends)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class Tunnel(socketserver.ThreadingTCPServer):
    """127.0.0.1:`port` (a free one) to `host:target_port` on the run's network; `close` ends it."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, relay: tuple[str, int], secret: str, host: str, target_port: int) -> None:
        self.relay, self.secret, self.host, self.target_port = relay, secret, host, target_port
        super().__init__(("127.0.0.1", 0), _Splice)
        self.address = ("127.0.0.1", int(self.server_address[1]))
        threading.Thread(target=self.serve_forever, name=f"tunnel-{host}-{target_port}", daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Splice(socketserver.BaseRequestHandler):
    """One local connection and its relay connection, copied both ways."""

    server: Tunnel

    def handle(self) -> None:
        try:
            upstream = through_relay(self.server.relay, self.server.secret, self.server.host, self.server.target_port)
        except OSError:
            return  # the local client sees its connection closed, as if refused
        with upstream:
            back = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
            back.start()
            pump(self.request, upstream)
            back.join()
