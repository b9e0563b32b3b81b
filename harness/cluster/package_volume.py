"""The harness package in a volume of the run, mounted read-only where drivers and executors import it:
copied in through the engine's API, so no host path of the harness's machine has to exist in the engine
(an engine in a VM or on another machine sees only what it is sent).

The package is compiled in the volume by the image's own Python: a read-only package without bytecode
is compiled again by every Python process that imports it (each driver, each executor's Python worker).
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from harness.cluster.engine import docker_client
from harness.errors import InfrastructureError

MOUNT = "/package"  # where the copying container sees the volume
COMPILE_TIMEOUT_S = 120


def package_tar(package: Path) -> bytes:
    """The package's files (no bytecode), as a tar whose members sit at its top."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(package, arcname=".", filter=lambda m: None if "__pycache__" in m.name else m)
    return buffer.getvalue()


def package_volume(name: str, package: Path, image: str, labels: dict[str, str]) -> str:
    """Create volume `name` (labelled as the run) holding `package`; returns its name, for volume mappings."""
    client = docker_client()
    client.volumes.create(name, labels=labels)
    copier = client.containers.create(image, ["python", "-m", "compileall", "-q", MOUNT],
                                      volumes={name: {"bind": MOUNT, "mode": "rw"}}, labels=labels,
                                      name=f"{name}-copy", network_disabled=True)
    try:
        copier.put_archive(MOUNT, package_tar(package))
        copier.start()
        status = copier.wait(timeout=COMPILE_TIMEOUT_S)["StatusCode"]
        if status != 0:
            output = copier.logs().decode(errors="replace").strip()
            raise InfrastructureError(f"compiling the harness package in volume {name} exited {status}: {output}")
    finally:
        copier.remove(force=True)
    return name
