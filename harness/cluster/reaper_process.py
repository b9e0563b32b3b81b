"""The reaper's program, run inside its container (standard library only): it waits for the harness to
connect and say the run's secret, and when that connection closes (the harness ended, or was killed with
SIGKILL and the kernel closed its socket) it removes every container and network of the run, then
itself. A connection without the secret is closed and the reaper waits on: whoever else reaches its
published port can neither take the harness's place nor reap a live run. Testcontainers' Ryuk does the
same; its image cannot be pulled here.

    EO_SECRET=... python reaper_process.py RUN_ID      (EO_ENGINE: unix:///var/run/docker.sock, or tcp://HOST:PORT;
                                                     EO_TLS_CERT, EO_TLS_KEY, EO_TLS_CA: PEM text, for TLS)
"""

from __future__ import annotations

import hmac
import http.client
import json
import os
import socket
import ssl
import sys
import tempfile
import time
import urllib.parse

DOCKER_SOCKET = "/var/run/docker.sock"
PORT = 8080
FIRST_CONNECTION_SECONDS = 120  # a harness that dies before it connects is reaped all the same
SECRET_SECONDS = 10  # how long a connection may take to say the secret


class Engine(http.client.HTTPConnection):
    """HTTP to the engine's API: over its unix socket (mounted into this container), or over TCP for an
    engine reached that way (one in a VM or on another machine, whose socket is not on the harness's host),
    with TLS when the harness gave its client certificate."""

    tls: ssl.SSLContext | None = None

    def __init__(self) -> None:
        url = urllib.parse.urlsplit(os.environ.get("EO_ENGINE", f"unix://{DOCKER_SOCKET}"))
        self.unix = url.path if url.scheme == "unix" else None
        super().__init__(url.hostname or "localhost", url.port or 2375, timeout=60)

    def connect(self) -> None:
        if self.unix is None:
            super().connect()
            if self.tls is not None:
                self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.host)
            return
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix)


def tls_context() -> ssl.SSLContext | None:
    """The client side of the engine's TLS from EO_TLS_CERT and EO_TLS_KEY (the engine's certificate checked
    against EO_TLS_CA when given, as the harness's own client does: DOCKER_TLS_VERIFY); None without them."""
    if "EO_TLS_CERT" not in os.environ:
        return None
    context = ssl.create_default_context(cadata=os.environ.get("EO_TLS_CA") or None)
    if "EO_TLS_CA" not in os.environ:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with tempfile.TemporaryDirectory() as folder:  # load_cert_chain takes files; they go once loaded
        cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
        for path, variable in ((cert, "EO_TLS_CERT"), (key, "EO_TLS_KEY")):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
                file.write(os.environ[variable])
        context.load_cert_chain(cert, key)
    return context


def api(method: str, path: str) -> object:
    connection = Engine()
    connection.request(method, path)
    body = connection.getresponse().read()
    connection.close()
    return json.loads(body) if body.strip().startswith((b"[", b"{")) else None


def reap(run_id: str) -> None:
    """Remove the run's containers (this one last), networks and volumes."""
    me = socket.gethostname()  # a container's host name is its short id unless set
    filters = urllib.parse.quote(json.dumps({"label": [f"eo-harness.run={run_id}"]}))
    containers = api("GET", f"/containers/json?all=1&filters={filters}") or []
    for container in containers:  # type: ignore[union-attr]
        if not container["Id"].startswith(me):
            api("DELETE", f"/containers/{container['Id']}?force=1&v=1")
    for network in api("GET", f"/networks?filters={filters}") or []:  # type: ignore[union-attr]
        api("DELETE", f"/networks/{network['Id']}")
    for volume in (api("GET", f"/volumes?filters={filters}") or {}).get("Volumes") or []:  # type: ignore[union-attr]
        api("DELETE", f"/volumes/{volume['Name']}?force=1")
    print(f"REAPED {run_id}", flush=True)
    api("DELETE", f"/containers/{me}?force=1&v=1")


def said_secret(connection: socket.socket, secret: bytes) -> bool:
    """Whether the connection's first line is the run's secret."""
    connection.settimeout(SECRET_SECONDS)
    line = b""
    try:
        while not line.endswith(b"\n") and len(line) < 256:
            chunk = connection.recv(1)
            if not chunk:
                break
            line += chunk
    except OSError:
        return False
    return hmac.compare_digest(line.strip(), secret)


def keep_alive(connection: socket.socket) -> None:
    """Probed after 30 s idle: a dropped route ends the connection (and reaps), a live one stays."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, option):
            connection.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def the_harness(server: socket.socket, secret: bytes) -> socket.socket | None:
    """The first connection that says the secret before the deadline; others are closed."""
    deadline = time.monotonic() + FIRST_CONNECTION_SECONDS
    while (left := deadline - time.monotonic()) > 0:
        server.settimeout(left)
        try:
            connection, _ = server.accept()
        except OSError:
            return None
        if said_secret(connection, secret):
            return connection
        connection.close()
    return None


def main() -> None:
    run_id = sys.argv[1]
    secret = os.environ["EO_SECRET"].encode()
    Engine.tls = tls_context()
    server = socket.create_server(("0.0.0.0", PORT))
    print("REAPER-READY", flush=True)
    harness = the_harness(server, secret)
    server.close()  # one harness: later connections are refused, not left waiting
    if harness is not None:
        keep_alive(harness)
        harness.settimeout(None)
        try:
            while harness.recv(4096):  # nothing more is sent; an empty read is the connection closing
                pass
        except OSError:
            pass
    reap(run_id)


if __name__ == "__main__":
    main()
