"""The reaper obeys only the harness of its run: a connection that does not say the run's secret is
closed and the reaper waits on for the harness; on an engine over TLS it reaches the engine with the
harness's client certificate."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from harness.cluster import engine_tls, reaper, reaper_process

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


@pytest.fixture
def tls_engine(tmp_path: Path):
    """An HTTPS server on loopback that asks for a client certificate of the engine's CA, as dockerd
    --tlsverify does, and answers an empty list (no containers): (its port, the client's DOCKER_CERT_PATH)."""
    server_folder, client_folder = engine_tls.make(tmp_path / "tls", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=server_folder / "ca.pem")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(server_folder / "server-cert.pem", server_folder / "server-key.pem")

    class Empty(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"[]")

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Empty)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], client_folder
    httpd.shutdown()
    httpd.server_close()


def test_the_reaper_reaches_an_engine_over_tls_with_the_harnesss_client_certificate(tls_engine, monkeypatch) -> None:
    """On a TLS engine the reaper gets this process's client certificate (read as the docker SDK reads
    DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) and checks the engine's certificate against its CA."""
    port, certificates = tls_engine
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{port}")
    monkeypatch.setenv("DOCKER_TLS_VERIFY", "1")
    monkeypatch.setenv("DOCKER_CERT_PATH", str(certificates))
    given = reaper.tls_environment()
    assert set(given) == {"EO_TLS_CERT", "EO_TLS_KEY", "EO_TLS_CA"}
    for variable, value in {**given, "EO_ENGINE": f"tcp://127.0.0.1:{port}"}.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(reaper_process.Engine, "tls", reaper_process.tls_context())
    assert reaper_process.api("GET", "/containers/json") == []
    monkeypatch.setattr(reaper_process.Engine, "tls", None)  # without it the engine refuses the connection
    with pytest.raises((ConnectionError, http.client.HTTPException)):
        reaper_process.api("GET", "/containers/json")


def test_a_reaper_of_an_engine_without_tls_gets_no_certificate(monkeypatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
    assert reaper.tls_environment() == {}
