"""The relay's service port: client connections claimed by the gate (suites/unit/test_gate.py), and file
operations on the checkpoint volume as the harness makes them (harness.gate.relay_files)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from harness.gate import relay
from harness.gate.relay_files import RelayFiles
from harness.gate.tunnel import Tunnel
from suites.unit.conftest import SECRET

pytestmark = pytest.mark.unit


def test_files_written_walked_and_read_through_the_service_port(relay_ports, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "ROOT", str(tmp_path.resolve()))
    files = RelayFiles("127.0.0.1", relay_ports[1], SECRET)
    root = str(tmp_path.resolve())
    assert files.walk(f"{root}/query") == []
    files.write(f"{root}/query/offsets/0", b"v1\n{}\n")
    files.write(f"{root}/query/commits/0", b"v1\n")
    assert sorted(files.walk(f"{root}/query")) == ["commits/0", "offsets/0"]
    assert files.read_text(f"{root}/query/offsets/0") == "v1\n{}\n"
    with pytest.raises(OSError, match="FileNotFoundError"):
        files.read_text(f"{root}/query/offsets/1")
    parquet = bytes(range(256)) * 3  # a table's data file: any bytes, whole
    files.write(f"{root}/query-table/part-0.parquet", parquet)
    assert files.read_bytes(f"{root}/query-table/part-0.parquet") == parquet
    with pytest.raises(OSError, match="outside"):
        files.walk("/etc")
    files.close()


def test_a_file_over_the_read_limit_is_refused_not_read_whole(relay_ports, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink writes the volume: a 200 MB `offsets/7` took the relay to 1 GiB and blocked its loop."""
    monkeypatch.setattr(relay, "ROOT", str(tmp_path.resolve()))
    monkeypatch.setattr(relay, "MAX_READ", 1000)
    (tmp_path / "query" / "offsets").mkdir(parents=True)
    (tmp_path / "query" / "offsets" / "7").write_bytes(b"x" * 1001)
    files = RelayFiles("127.0.0.1", relay_ports[1], SECRET)
    with pytest.raises(OSError, match="1,001 bytes, over the relay's limit of 1,000"):
        files.read_bytes(f"{tmp_path.resolve()}/query/offsets/7")
    assert files.walk(f"{tmp_path.resolve()}/query") == ["offsets/7"]  # the connection goes on
    files.close()


def test_a_client_is_closed_while_no_harness_is_attached(relay_ports) -> None:
    with socket.create_connection(("127.0.0.1", relay_ports[0]), timeout=5) as client:
        assert client.recv(1) == b""  # nobody could route it: closed, not left hanging


@pytest.mark.parametrize("first_line", [b"files\n", b"control\n", b"data 1\n", b"wrong-secret files\n",
                                        b"wrong-secret control\n", b"\n"])
def test_a_connection_without_the_runs_secret_is_closed_before_anything(relay_ports, first_line: bytes) -> None:
    """Whoever reaches the published port, without the run's secret, can neither read nor write a file,
    nor take the control connection, nor claim a client of the system under test."""
    with socket.create_connection(("127.0.0.1", relay_ports[1]), timeout=5) as stranger:
        stranger.sendall(first_line + b'{"op": "walk", "path": "/checkpoints"}\n')
        assert stranger.recv(100) == b""  # closed, nothing answered


def test_clients_are_announced_under_ids_no_one_can_guess(relay_ports) -> None:
    with socket.create_connection(("127.0.0.1", relay_ports[1]), timeout=5) as control:
        control.sendall(f"{SECRET} control\n".encode())
        replies = control.makefile("rb")
        assert replies.readline() == b"ready\n"
        ids = []
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", relay_ports[0]), timeout=5):
                ids.append(replies.readline().split()[0])
        assert all(len(i) == 16 for i in ids) and ids[0] != ids[1]
        assert not any(i.isdigit() for i in ids)


@pytest.fixture
def echo_port():
    """A server on loopback that answers each line with itself: a container port a tunnel reaches."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection, connection.makefile("rb") as lines:
                for line in lines:
                    connection.sendall(line)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def test_a_tunnel_reaches_a_target_through_the_relay_with_the_secret(relay_ports, echo_port: int) -> None:
    """What only the harness needs (Kafka's direct listener, toxiproxy's API) is reached through the relay's
    published port, with the run's secret, from a port on this host's loopback: it is never published."""
    tunnel = Tunnel(("127.0.0.1", relay_ports[1]), SECRET, "127.0.0.1", echo_port)
    try:
        assert tunnel.address[0] == "127.0.0.1"
        for _ in range(2):  # each local connection has a relay connection of its own
            with socket.create_connection(tunnel.address, timeout=5) as local:
                local.sendall(b"hello\n")
                assert local.makefile("rb").readline() == b"hello\n"
    finally:
        tunnel.close()


@pytest.mark.parametrize("first_line", ["wrong-secret connect 127.0.0.1 {port}", "connect 127.0.0.1 {port}",
                                        "{secret} connect localhost {port}", "{secret} connect 127.0.0.1 x"])
def test_a_tunnel_goes_only_with_the_secret_and_only_to_the_runs_containers(relay_ports, echo_port: int,
                                                                          first_line: str) -> None:
    """Without the secret, or to a host that is not one of the run's containers (here: not the one target
    the relay was given), the relay closes the connection: it is nobody's way into the engine's networks."""
    with socket.create_connection(("127.0.0.1", relay_ports[1]), timeout=5) as stranger:
        stranger.sendall(first_line.format(secret=SECRET, port=echo_port).encode() + b"\nhello\n")
        assert stranger.recv(100) == b""


def test_a_connection_that_says_nothing_is_closed_at_its_first_lines_deadline(relay_ports,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "FIRST_LINE_S", 0.3)
    with socket.create_connection(("127.0.0.1", relay_ports[1]), timeout=5) as stranger:
        stranger.sendall(b"half a line")
        started = time.monotonic()
        assert stranger.recv(1) == b""
        assert time.monotonic() - started < 3


def test_over_the_cap_of_unauthenticated_connections_the_oldest_is_closed_and_the_harness_gets_in(
        relay_ports, monkeypatch: pytest.MonkeyPatch) -> None:
    """Strangers waiting for their first line take at most UNAUTHENTICATED_MAX places; a new connection
    closes the oldest of them, so the harness, which says its line as it connects, is never kept out by
    strangers who hold theirs silent (64 renewed every 10 s reset every connection of the harness's)."""
    monkeypatch.setattr(relay, "UNAUTHENTICATED_MAX", 3)
    strangers = [socket.create_connection(("127.0.0.1", relay_ports[1]), timeout=5) for _ in range(3)]
    time.sleep(0.2)  # each is waiting for its line
    files = RelayFiles("127.0.0.1", relay_ports[1], SECRET)
    assert answered(files), "the harness was kept out"
    assert strangers[0].recv(1) == b""  # the oldest closed for it
    for stranger in strangers[1:]:
        stranger.settimeout(0.2)
        with pytest.raises(socket.timeout):  # still waiting: only the oldest made room
            stranger.recv(1)
        stranger.close()
    strangers[0].close()
    files.close()


def answered(files: RelayFiles) -> bool:
    """Whether the file service took the connection (it answers a walk outside its root with an error)."""
    try:
        files.walk("/etc")
    except OSError as error:
        return "outside" in str(error)
    return True
