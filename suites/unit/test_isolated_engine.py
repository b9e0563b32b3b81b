"""The isolated engine as a root command takes it: a name is checked before it goes into interface names,
folders and a root shell command; its certificates are a CA of its own, a server certificate for its
address alone and a client certificate, laid out as DOCKER_CERT_PATH expects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster import engine_tls, isolated_engine
from harness.cluster.engines import engine_name
from harness.errors import EXIT_BAD_INPUT, BadInput

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["../etc", "-x", "a b", "a;reboot", "$(id)", "A", "", "x" * 31, "far/1"])
def test_an_engine_name_that_is_not_lower_case_letters_digits_and_dashes_is_bad_input(name: str) -> None:
    with pytest.raises(BadInput, match="engine name"):
        engine_name(name)


def test_the_command_line_refuses_such_a_name_in_one_line_before_anything_runs() -> None:
    finished = subprocess.run([sys.executable, "-m", "harness", "engine", "start", "--isolated", "x;id"],
                              capture_output=True, text=True, timeout=60)
    assert finished.returncode == EXIT_BAD_INPUT, finished.stderr
    assert len(finished.stderr.strip().splitlines()) == 1 and "engine name" in finished.stderr


def test_a_good_name_is_kept() -> None:
    assert engine_name("ci-far") == "ci-far"
    assert isolated_engine.url(9) == "tcp://10.210.9.2:2376"


def test_the_certificates_verify_as_docker_checks_them(tmp_path: Path) -> None:
    server, client = engine_tls.make(tmp_path / "tls", "10.210.9.2")
    assert sorted(p.name for p in client.iterdir()) == ["ca.pem", "cert.pem", "key.pem"]
    for certificate in (server / "server-cert.pem", client / "cert.pem"):
        verified = subprocess.run(["openssl", "verify", "-CAfile", str(server / "ca.pem"), str(certificate)],
                                  capture_output=True, text=True)
        assert verified.returncode == 0, verified.stderr
    text = subprocess.run(["openssl", "x509", "-in", str(server / "server-cert.pem"), "-noout", "-text"],
                          capture_output=True, text=True).stdout
    assert "IP Address:10.210.9.2" in text and "TLS Web Server Authentication" in text
    assert (client / "key.pem").stat().st_mode & 0o077 == 0  # the keys: their owner's alone
    with pytest.raises(ValueError):
        engine_tls.make(tmp_path / "other", "far; id")  # an address only: it goes into openssl's configuration
