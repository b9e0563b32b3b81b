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
    docker_client().volumes.create(name, labels=labels)
    fill(name, MOUNT, package_tar(package), image, ["python", "-m", "compileall", "-q", MOUNT], labels,
         f"{name}-copy", COMPILE_TIMEOUT_S, f"compiling the harness package in volume {name}")
    return name


def fill(volume: str, mount: str, archive: bytes, image: str, command: list[str], labels: dict[str, str],
         name: str, timeout_s: float, what: str) -> None:
    """Put `archive` into `volume` (seen at `mount`) and run `command` there, in a container of `image` with
    no network, removed after; InfrastructureError naming `what` when the command fails."""
    filler = docker_client().containers.create(image, command, volumes={volume: {"bind": mount, "mode": "rw"}},
                                               labels=labels, name=name, network_disabled=True)
    try:
        filler.put_archive(mount, archive)
        filler.start()
        status = filler.wait(timeout=timeout_s)["StatusCode"]
        if status != 0:
            output = filler.logs().decode(errors="replace").strip()
            raise InfrastructureError(f"{what} exited {status}: {output}")
    finally:
        filler.remove(force=True)
