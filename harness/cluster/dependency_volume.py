"""A sink's dependencies (their wheels and jars: harness.subject.bundle) installed into the cluster's
dependencies volume, which drivers and workers mount read-only: each set once, in a folder named by its
digest, its wheels installed by the image's own pip (no index: the wheels are all there is) and compiled by
its Python, its jars beside them. Copied in through the engine's API, as the harness package is
(harness.cluster.package_volume): no host path has to exist in the engine, and no container reaches a
package index."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Sequence
from pathlib import Path

from harness.cluster.package_volume import fill
from harness.cluster.spark import DEPENDENCIES as MOUNT  # read-only there; read-write for the installer

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


def files_tar(digest: str, wheels: Sequence[Path], jars: Sequence[Path]) -> bytes:
    """The wheels (under wheels/) and jars (at the top) as a tar, under `<digest>.in/`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for wheel in wheels:
            archive.add(wheel, arcname=f"{digest}.in/wheels/{wheel.name}")
        for jar in jars:
            archive.add(jar, arcname=f"{digest}.in/{jar.name}")
    return buffer.getvalue()


def install(volume: str, digest: str, wheels: Sequence[Path], jars: Sequence[Path], image: str,
            labels: dict[str, str]) -> str:
    """Install the set `digest` (its wheels and jars) into `volume` with the Spark image `image`; returns its
    folder as the containers see it."""
    command = ["sh", "-c", INSTALL.format(mount=MOUNT, digest=digest)]
    fill(volume, MOUNT, files_tar(digest, wheels, jars), image, command, labels, f"{volume}-{digest[:12]}",
         INSTALL_TIMEOUT_S, f"installing the sink's dependencies in volume {volume}")
    return str(Path(MOUNT) / digest)
