"""An engine's own CA is trusted despite REQUESTS_CA_BUNDLE (docker/docker-py#2433): the bundle variables
point at their bundle with the engine's CA added, so the engine verifies and nothing else loses trust."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.engine_ca import trust_engine_ca

pytestmark = pytest.mark.unit


def test_the_engines_ca_joins_each_bundle_variable_once(tmp_path: Path) -> None:
    certificates = tmp_path / "client"
    certificates.mkdir()
    for name, text in (("ca.pem", "ENGINE CA\n"), ("cert.pem", "CERT\n"), ("key.pem", "KEY\n")):
        (certificates / name).write_text(text)
    bundle = tmp_path / "system.pem"
    bundle.write_text("SYSTEM CAS\n")
    environ = {"DOCKER_HOST": "tcp://10.0.0.7:2376", "DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(certificates),
               "REQUESTS_CA_BUNDLE": str(bundle)}
    assert trust_engine_ca(tmp_path / "tls", environ) == ["REQUESTS_CA_BUNDLE"]
    assert Path(environ["REQUESTS_CA_BUNDLE"]).read_text() == "SYSTEM CAS\nENGINE CA\n"
    assert trust_engine_ca(tmp_path / "tls", environ) == []  # already there: nothing more
    assert bundle.read_text() == "SYSTEM CAS\n"  # the user's bundle itself is never written


@pytest.mark.parametrize("engine", [{"DOCKER_HOST": "tcp://10.0.0.7:2375"}, {"DOCKER_HOST": "unix:///x.sock"}])
def test_nothing_changes_for_an_engine_without_a_ca_to_verify(tmp_path: Path, engine: dict[str, str]) -> None:
    environ = {"REQUESTS_CA_BUNDLE": str(tmp_path / "system.pem")}
    assert trust_engine_ca(tmp_path / "tls", environ, engine) == []
    assert environ == {"REQUESTS_CA_BUNDLE": str(tmp_path / "system.pem")}


def test_missing_certificates_are_left_for_the_engines_client_to_say(tmp_path: Path) -> None:
    environ = {"DOCKER_TLS_VERIFY": "1", "DOCKER_CERT_PATH": str(tmp_path / "none"),
               "REQUESTS_CA_BUNDLE": str(tmp_path / "system.pem")}
    assert trust_engine_ca(tmp_path / "tls", environ) == []
