"""The reaper's program, run inside its container (standard library only): it waits for the harness to
connect and say the run's secret, answers that it heard it (a harness whose connection was closed unheard,
the reaper's hearing full of strangers', connects again), and when that connection closes (the harness
ended, or was killed with SIGKILL and the kernel closed its socket) it removes every container and network
of the run, then itself. A connection without the secret is closed and the reaper waits on: whoever else
reaches its published port can neither take the harness's place nor reap a live run (connections are heard
at once, each for a few seconds in all: one that trickles bytes delays no other). Testcontainers' Ryuk does
the same; its image cannot be pulled here.

    EO_SECRET=... python reaper_process.py RUN_ID      (EO_ENGINE: unix:///var/run/docker.sock, or tcp://HOST:PORT;
                                                     EO_TLS_CERT, EO_TLS_KEY, EO_TLS_CA: PEM text, for TLS)
"""

from __future__ import annotations

import hmac
import http.client
import json
import os
import selectors
import socket
import ssl
import sys
import tempfile
import time
import urllib.parse

DOCKER_SOCKET = "/var/run/docker.sock"
PORT = 8080
FIRST_CONNECTION_SECONDS = 120  # a harness that dies before it connects is reaped all the same
SECRET_SECONDS = 10  # how long a connection may take to say the secret, in all
SECRET_LINE = 256  # the longest first line heard: the secret is 32 hex digits
# Connections heard at once; one more is closed as it comes. Each costs a descriptor and at most SECRET_LINE
# bytes, for SECRET_SECONDS: a cap far below a container's descriptor limit (1024 at the least).
HEARD_AT_ONCE = 256
HEARD = b"EO-REAPER-HEARD\n"  # said to the harness once its secret is taken: it waits for it, and tries again


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


def keep_alive(connection: socket.socket) -> None:
    """Probed after 30 s idle: a dropped route ends the connection (and reaps), a live one stays."""
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, option):
            connection.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def the_harness(server: socket.socket, secret: bytes) -> socket.socket | None:
    """The first connection whose first line is the secret, before the deadline; the others are closed.
    Every connection is heard at once, each for SECRET_SECONDS in all (not per byte): a stranger who
    connects first and sends a byte now and then cannot keep the harness's connection waiting until the
    deadline passes and the live run is reaped."""
    deadline = time.monotonic() + FIRST_CONNECTION_SECONDS
    hearing = Hearing(server)
    try:
        while time.monotonic() < deadline:
            for connection, line in hearing.lines(deadline):
                if hmac.compare_digest(line.strip(), secret):
                    connection.setblocking(True)
                    try:
                        connection.sendall(HEARD)
                    except OSError:  # gone since it spoke: the harness tries again
                        connection.close()
                        continue
                    return connection
                connection.close()
        return None
    finally:
        hearing.close()


class Hearing:
    """The connections a server took, heard at once until each says its first line or its time is up; up to
    HEARD_AT_ONCE: one more is closed as it comes."""

    def __init__(self, server: socket.socket) -> None:
        self.server = server
        server.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(server, selectors.EVENT_READ)
        self.heard: dict[socket.socket, tuple[float, bytes]] = {}  # a connection -> when its time is up, what it said

    def lines(self, deadline: float) -> list[tuple[socket.socket, bytes]]:
        """The connections whose first line came (whole, SECRET_LINE long, or cut by a close) by the next
        event or `deadline`, with it; no longer heard. Those whose time is up are closed."""
        now = time.monotonic()
        for connection in [c for c, (until, _) in self.heard.items() if until <= now]:
            self.forget(connection).close()
        said = []
        for key, _ in self.selector.select(min([deadline, *(until for until, _ in self.heard.values())]) - now):
            if key.data is None:  # the server: a connection to take
                self.take()
            elif (line := self.line(key.data)) is not None:
                said.append((self.forget(key.data), line))
        return said

    def take(self) -> None:
        try:
            connection, _ = self.server.accept()
        except OSError:  # gone before it was taken
            return
        if len(self.heard) >= HEARD_AT_ONCE:
            connection.close()
            return
        connection.setblocking(False)
        self.heard[connection] = (time.monotonic() + SECRET_SECONDS, b"")
        self.selector.register(connection, selectors.EVENT_READ, connection)

    def line(self, connection: socket.socket) -> bytes | None:
        """Its first line once said; None while more may come."""
        until, said = self.heard[connection]
        try:
            chunk = connection.recv(SECRET_LINE - len(said))
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        said += chunk
        if chunk and b"\n" not in said and len(said) < SECRET_LINE:
            self.heard[connection] = (until, said)
            return None
        return said.partition(b"\n")[0]

    def forget(self, connection: socket.socket) -> socket.socket:
        self.selector.unregister(connection)
        del self.heard[connection]
        return connection

    def close(self) -> None:
        """Close every connection still heard."""
        for connection in list(self.heard):
            self.forget(connection).close()
        self.selector.close()


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
