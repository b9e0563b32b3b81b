"""The relay's service port: client connections claimed by the gate (suites/unit/test_gate.py), and file
operations on the checkpoint volume as the harness makes them (harness.gate.relay_files)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.gate import relay
from harness.gate.relay_files import RelayFiles

pytestmark = pytest.mark.unit


def test_files_written_walked_and_read_through_the_service_port(relay_ports, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "ROOT", str(tmp_path.resolve()))
    files = RelayFiles("127.0.0.1", relay_ports[1])
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


def test_a_client_is_closed_while_no_harness_is_attached(relay_ports) -> None:
    with socket.create_connection(("127.0.0.1", relay_ports[0]), timeout=5) as client:
        assert client.recv(1) == b""  # nobody could route it: closed, not left hanging
