"""The reaper obeys only the harness of its run: a connection that does not say the run's secret is
closed and the reaper waits on for the harness; on an engine over TLS it reaches the engine with the
harness's client certificate."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
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
def reaper_server():
    """The reaper's port on loopback, and the connection `the_harness` takes from it, in a thread: (port,
    what it found, the thread)."""
    server = socket.create_server(("127.0.0.1", 0))
    found: list[socket.socket | None] = []
    waiter = threading.Thread(target=lambda: found.append(reaper_process.the_harness(server, b"s3cret")))
    waiter.start()
    yield server.getsockname()[1], found, waiter
    waiter.join(timeout=10)
    for connection in [server, *filter(None, found)]:
        connection.close()


def test_a_stranger_who_trickles_bytes_first_does_not_delay_the_harness(reaper_server) -> None:
    """Heard one at a time, with a timeout per byte, a stranger sending a byte every few seconds kept the
    harness's connection waiting past the reaper's deadline: the live run was reaped."""
    port, found, waiter = reaper_server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as stranger:
        stranger.sendall(b"g")
        time.sleep(0.1)
        started = time.monotonic()
        harness = socket.create_connection(("127.0.0.1", port), timeout=5)
        harness.sendall(b"s3cret\n")
        waiter.join(timeout=5)
        assert found and found[0] is not None and time.monotonic() - started < 1.5
        assert stranger.recv(1) == b""  # heard no more: closed once the harness was found
    harness.close()


def test_a_connection_has_its_time_to_say_the_secret_in_all_not_per_byte(monkeypatch) -> None:
    monkeypatch.setattr(reaper_process, "SECRET_SECONDS", 0.5)
    monkeypatch.setattr(reaper_process, "FIRST_CONNECTION_SECONDS", 2)
    server = socket.create_server(("127.0.0.1", 0))
    waiter = threading.Thread(target=reaper_process.the_harness, args=(server, b"s3cret"))
    waiter.start()
    with socket.create_connection(server.getsockname(), timeout=5) as stranger:
        started = time.monotonic()
        with pytest.raises(OSError):  # refused as it sends: closed
            for _ in range(20):
                stranger.sendall(b"s")
                time.sleep(0.1)
        assert time.monotonic() - started < 1.5
    waiter.join(timeout=5)
    server.close()


def test_connections_over_the_cap_are_closed_at_once_and_the_harness_gets_in_after(reaper_server,
                                                                                   monkeypatch) -> None:
    monkeypatch.setattr(reaper_process, "HEARD_AT_ONCE", 2)
    port, found, waiter = reaper_server
    strangers = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as over:
        assert over.recv(1) == b""
    for stranger in strangers:
        stranger.close()
    time.sleep(0.2)  # heard closing: their places are free
    harness = socket.create_connection(("127.0.0.1", port), timeout=5)
    harness.sendall(b"s3cret\n")
    waiter.join(timeout=5)
    assert found and found[0] is not None
    harness.close()


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


def test_a_harness_closed_unheard_while_strangers_fill_the_hearing_connects_again(monkeypatch) -> None:
    """With every place of the reaper's hearing held by silent strangers, the harness's connection was closed
    unheard and never tried again: the live run was reaped. It now waits for the reaper's answer, and
    connects again until it is heard."""
    monkeypatch.setattr(reaper_process, "HEARD_AT_ONCE", 4)
    monkeypatch.setattr(reaper_process, "SECRET_SECONDS", 2)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    found: list[socket.socket | None] = []
    waiter = threading.Thread(target=lambda: found.append(reaper_process.the_harness(server, b"s3cret")))
    waiter.start()
    strangers = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
    time.sleep(0.3)  # heard: the hearing is full
    connection = reaper.heard_connection("127.0.0.1", port, "s3cret", deadline_s=20)
    waiter.join(timeout=10)
    assert found and found[0] is not None, "the reaper never took the harness's connection"
    for each in [connection, server, found[0], *strangers]:
        each.close()


def test_a_reaper_that_never_answers_is_not_taken_for_one_that_heard(monkeypatch) -> None:
    server = socket.create_server(("127.0.0.1", 0))  # listens, takes, never answers
    monkeypatch.setattr(reaper, "HEARD_WAIT_S", 0.5)
    with pytest.raises(reaper.NotReady, match="did not hear"):
        reaper.heard_connection("127.0.0.1", server.getsockname()[1], "s3cret", deadline_s=1)
    server.close()
