"""A sink's dependencies (harness.subject.bundle) installed into the cluster's dependencies volume, which
drivers and workers mount read-only: each bundle once, in a folder named by its digest, its wheels
installed by the image's own pip (no index: the wheels are all there is) and compiled by its Python, its
jars beside them. Copied in through the engine's API, as the harness package is (harness.cluster.package_volume):
no host path has to exist in the engine, and no container reaches a package index."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.engine import docker_client
from harness.cluster.spark import DEPENDENCIES as MOUNT  # read-only there; read-write for the installer
from harness.errors import InfrastructureError

if TYPE_CHECKING:
    from harness.subject.bundle import Bundle

INSTALL_TIMEOUT_S = 300
INSTALL = """set -e
cd {mount}/{digest}.in
mkdir -p python jars
if ls wheels/*.whl >/dev/null 2>&1; then
  python -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target python \
    wheels/*.whl
  python -m compileall -q python
fi
if ls *.jar >/dev/null 2>&1; then mv *.jar jars/; fi
rm -rf wheels
chmod -R a+rX .
cd .. && mv {digest}.in {digest}
"""


def bundle_tar(bundle: Bundle) -> bytes:
    """The bundle's wheels (under wheels/) and jars (at the top) as a tar, under `<digest>.in/`."""
    assert bundle.folder is not None
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for wheel in bundle.wheels:
            archive.add(bundle.folder / "wheels" / wheel["file"], arcname=f"{bundle.digest}.in/wheels/{wheel['file']}")
        for jar in bundle.jars:
            archive.add(bundle.folder / "jars" / jar["file"], arcname=f"{bundle.digest}.in/{jar['file']}")
    return buffer.getvalue()


def install(volume: str, bundle: Bundle, image: str, labels: dict[str, str]) -> str:
    """Install `bundle` into `volume` with the Spark image `image`; returns its folder as the containers see it."""
    client = docker_client()
    installer = client.containers.create(image, ["sh", "-c", INSTALL.format(mount=MOUNT, digest=bundle.digest)],
                                         volumes={volume: {"bind": MOUNT, "mode": "rw"}}, labels=labels,
                                         name=f"{volume}-{bundle.digest[:12]}", network_disabled=True)
    try:
        installer.put_archive(MOUNT, bundle_tar(bundle))
        installer.start()
        status = installer.wait(timeout=INSTALL_TIMEOUT_S)["StatusCode"]
        if status != 0:
            output = installer.logs().decode(errors="replace").strip()
            raise InfrastructureError(f"installing the sink's dependencies in volume {volume} exited {status}: "
                                      f"{output}")
    finally:
        installer.remove(force=True)
    return str(Path(MOUNT) / bundle.digest)
