"""The bytes of a user's code that a run ships to the driver (a file as it is, or a module's top-level
package zipped), read once and checked against the relay's limit before anything starts."""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.gate.relay_files import MAX_WRITE

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # every entry's time: the same files make the same archive, and its hash


@dataclass(frozen=True)
class Shipment:
    """What is shipped for one file or package: its name as the driver sees it, its bytes, and the sha256
    of every file read into it (relative to the package's parent, or the file's name)."""

    root: Path  # the file, or the package's folder
    name: str  # my_sink.py, or my_package.zip
    data: bytes
    files: tuple[tuple[str, str], ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def pack(root: Path, what: str, spec: str) -> Shipment:
    """Read `root` (a file, or a package folder) into the bytes to ship; BadInput when they would not fit
    in one write through the relay."""
    if root.is_dir():
        shipment = _zipped(root)
    else:
        data = root.read_bytes()
        shipment = Shipment(root, root.name, data, ((root.name, hashlib.sha256(data).hexdigest()),))
    if len(shipment.data) > MAX_WRITE:
        raise BadInput(f"{what} '{spec}': {shipment.name} is {len(shipment.data):,} bytes to ship, over the relay's "
                       f"limit of {MAX_WRITE:,} bytes ({MAX_WRITE // 1024} KiB); ship only the code the driver "
                       "imports (data files and vendored libraries belong in the image or a volume)")
    return shipment


def package_files(package: Path) -> list[Path]:
    """The package's files, sorted, without bytecode."""
    found = []
    for folder, folders, names in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        found += [Path(folder) / name for name in sorted(names) if not name.endswith((".pyc", ".pyo"))]
    return found


def _zipped(package: Path) -> Shipment:
    """The package as a zip whose entries sit under its name (so `import package` works from it)."""
    buffer = io.BytesIO()
    hashes = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in package_files(package):
            name = path.relative_to(package.parent).as_posix()
            data = path.read_bytes()
            hashes.append((name, hashlib.sha256(data).hexdigest()))
            archive.writestr(zipfile.ZipInfo(name, ZIP_TIME), data, zipfile.ZIP_DEFLATED)
    return Shipment(package, f"{package.name}.zip", buffer.getvalue(), tuple(hashes))
