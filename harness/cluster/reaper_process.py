"""The reaper's program, run inside its container (standard library only): it waits for the harness to
connect, and when that connection closes (the harness ended, or was killed with SIGKILL and the kernel
closed its socket) it removes every container and network of the run, then itself. Testcontainers'
Ryuk does the same; its image cannot be pulled here.

    python reaper_process.py RUN_ID      (EO_ENGINE: unix:///var/run/docker.sock, as mounted, or tcp://HOST:PORT)
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import urllib.parse

DOCKER_SOCKET = "/var/run/docker.sock"
PORT = 8080
FIRST_CONNECTION_SECONDS = 120  # a harness that dies before it connects is reaped all the same


class Engine(http.client.HTTPConnection):
    """HTTP to the engine's API: over its unix socket (mounted into this container), or over TCP for an
    engine reached that way (one in a VM or on another machine, whose socket is not on the harness's host)."""

    def __init__(self) -> None:
        url = urllib.parse.urlsplit(os.environ.get("EO_ENGINE", f"unix://{DOCKER_SOCKET}"))
        self.unix = url.path if url.scheme == "unix" else None
        super().__init__(url.hostname or "localhost", url.port or 2375, timeout=60)

    def connect(self) -> None:
        if self.unix is None:
            return super().connect()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix)


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


def main() -> None:
    run_id = sys.argv[1]
    server = socket.create_server(("0.0.0.0", PORT))
    server.settimeout(FIRST_CONNECTION_SECONDS)
    print("REAPER-READY", flush=True)
    try:
        harness, _ = server.accept()
        harness.settimeout(None)
        while harness.recv(4096):  # nothing is sent; an empty read is the connection closing
            pass
    except OSError:
        pass
    reap(run_id)


if __name__ == "__main__":
    main()
