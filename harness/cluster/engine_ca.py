"""An engine reached over TLS with a CA of its own, where REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) is set:
requests takes that bundle over the docker SDK's CA for every call (docker/docker-py#2433), and every
connection to the engine fails its certificate check. The bundle variables are pointed instead at a copy
of their bundle with the engine's CA added: the engine verifies, and everything else that reads them
(pip fetching the images' wheels included) trusts what it trusted before."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from docker.errors import TLSParameterError
from docker.utils import kwargs_from_env

BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def trust_engine_ca(folder: Path, environ: MutableMapping[str, str] = os.environ,
                    engine: Mapping[str, str] | None = None) -> list[str]:
    """Add the engine's CA (DOCKER_CERT_PATH's ca.pem, when DOCKER_TLS_VERIFY asks for it, in `engine`, else in
    `environ`) to the bundle of each variable set in `environ`, written under `folder`; the variables changed."""
    try:
        tls = kwargs_from_env(dict(engine if engine is not None else environ)).get("tls")
    except TLSParameterError:  # certificates missing: the engine's client says so when it connects
        return []
    if tls is None or not tls.verify or not tls.ca_cert or not Path(tls.ca_cert).is_file():
        return []
    engine_ca = Path(tls.ca_cert).read_bytes()
    changed = []
    for variable in BUNDLE_VARIABLES:
        bundle = environ.get(variable)
        if not bundle or not Path(bundle).is_file():
            continue
        trusted = Path(bundle).read_bytes()
        if engine_ca in trusted:
            continue
        combined = trusted.rstrip(b"\n") + b"\n" + engine_ca
        path = folder / f"ca-bundle-{hashlib.sha256(combined).hexdigest()[:16]}.pem"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            staged = path.with_suffix(f".{os.getpid()}.part")
            staged.write_bytes(combined)
            staged.replace(path)
        environ[variable] = str(path)
        changed.append(variable)
    return changed
