"""The reaper obeys only the harness of its run: a connection that does not say the run's secret is
closed and the reaper waits on for the harness."""

from __future__ import annotations

import socket
import threading

import pytest

from harness.cluster import reaper_process

pytestmark = pytest.mark.unit


def test_only_the_connection_that_says_the_secret_is_taken_for_the_harness() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    found: list[socket.socket | None] = []
    waiter = threading.Thread(target=lambda: found.append(reaper_process.the_harness(server, b"s3cret")))
    waiter.start()
    stranger = socket.create_connection(("127.0.0.1", port), timeout=5)
    stranger.sendall(b"guess\n")
    assert stranger.recv(10) == b""  # refused: closed
    harness = socket.create_connection(("127.0.0.1", port), timeout=5)
    harness.sendall(b"s3cret\n")
    waiter.join(timeout=10)
    assert found and found[0] is not None
    found[0].close()
    for connection in (stranger, harness, server):
        connection.close()
