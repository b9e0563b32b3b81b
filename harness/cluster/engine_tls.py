"""Certificates for a Docker engine reached over TCP with TLS, as Docker's "Protect the Docker daemon socket"
describes: a CA of the engine's own, a server certificate for the engine's address, and a client
certificate, laid out as the docker CLI and SDK expect them (DOCKER_CERT_PATH: ca.pem, cert.pem, key.pem).
Made with the openssl binary: only the isolated engine, a root-only test bed, needs them."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from harness.errors import DockerUnavailable

DAYS = "30"
CURVE = "prime256v1"
# what RFC 5280 asks of a leaf, and Python 3.13's default TLS check (VERIFY_X509_STRICT) refuses without:
# the CA's key identifier, the key's usage (the CA's own: keyCertSign, set where the CA is made)
LEAF = ("basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
RECIPE = f"{CURVE} {DAYS} {LEAF}"  # kept certificates made otherwise are made again


def make(folder: Path, address: str) -> tuple[Path, Path]:
    """Write a CA, a server certificate for IP `address` and a client certificate under `folder` (the keys
    readable by their owner only); (the server's folder: ca.pem, server-cert.pem, server-key.pem; the
    client's, a DOCKER_CERT_PATH). Kept when present: an engine restarted keeps its clients' certificates."""
    ipaddress.ip_address(address)  # a name here would go into openssl's configuration unchecked
    server, client = folder / "server", folder / "client"
    recipe = folder / "recipe"
    if (client / "key.pem").exists() and (server / "server-key.pem").exists() and _made_here(recipe):
        return server, client
    for made in (folder, server, client):
        made.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca_key, ca = folder / "ca-key.pem", server / "ca.pem"
    _openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", f"ec_paramgen_curve:{CURVE}", "-nodes",
             "-keyout", str(ca_key), "-out", str(ca), "-days", DAYS, "-subj", "/CN=eo-harness engine CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    _signed(folder, ca, ca_key, server / "server-key.pem", server / "server-cert.pem", "/CN=eo-harness engine",
            f"subjectAltName=IP:{address}\nextendedKeyUsage=serverAuth\n{LEAF}")
    _signed(folder, ca, ca_key, client / "key.pem", client / "cert.pem", "/CN=eo-harness",
            f"extendedKeyUsage=clientAuth\n{LEAF}")
    (client / "ca.pem").write_bytes(ca.read_bytes())
    for key in (ca_key, server / "server-key.pem", client / "key.pem"):
        key.chmod(0o600)
    recipe.write_text(RECIPE)
    return server, client


def _made_here(recipe: Path) -> bool:
    """Certificates kept from an engine's earlier start were made by this recipe (an older one's CA lacked
    what Python 3.13 checks)."""
    return recipe.is_file() and recipe.read_text() == RECIPE


def _signed(folder: Path, ca: Path, ca_key: Path, key: Path, cert: Path, subject: str, extensions: str) -> None:
    """A new key and its certificate, signed by the CA, with `extensions` (an openssl extfile's lines)."""
    request, extfile = folder / "request.csr", folder / "extensions.cnf"
    extfile.write_text(extensions)
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", f"ec_paramgen_curve:{CURVE}", "-nodes",
             "-keyout", str(key), "-out", str(request), "-subj", subject)
    _openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(cert), "-days", DAYS, "-extfile", str(extfile))
    request.unlink()
    extfile.unlink()


def _openssl(*arguments: str) -> None:
    result = subprocess.run(["openssl", *arguments], capture_output=True, text=True)
    if result.returncode != 0:
        raise DockerUnavailable(f"openssl {arguments[0]} failed making the engine's certificates: "
                                f"{result.stderr.strip().splitlines()[-1:] or result.returncode}")
