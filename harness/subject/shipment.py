"""The bytes of a user's code that a run ships to the driver (a file as it is, or a module's top-level
package zipped), read and hashed once per process and checked against the relay's limit before anything
starts. Every scenario of the process (every row of a certification; its worker processes adopt the same
bytes) ships those bytes, the certificate hashes them, and a file edited meanwhile is refused, named,
rather than tested or attested unnoticed."""

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

    def sha256_of(self, path: Path) -> str:
        """The hash of one of its files, as it was read."""
        name = path.name if path == self.root else path.relative_to(self.root.parent).as_posix()
        return dict(self.files)[name]

    def to_dict(self) -> dict:
        """As a certificate lists it: what was shipped, its hash, and every file's."""
        return {"name": self.name, "sha256": self.sha256, "files": dict(self.files)}


_READ: dict[Path, Shipment] = {}  # this process's shipments, by their root


def read_once(root: Path, what: str, spec: str) -> Shipment:
    """The bytes of `root` as first read in this process (read now the first time); BadInput naming the
    file when one changed since."""
    read = _READ.get(root)
    if read is None:
        read = _READ[root] = pack(root, what, spec)
    else:
        check_unchanged(read, what, spec)
    return read


def check_unchanged(read: Shipment, what: str, spec: str) -> None:
    """BadInput naming the first file of `read` that is no longer as it was read (edited, added, removed)."""
    now = dict(_hashes(read.root))
    before = dict(read.files)
    for name in sorted(before.keys() | now.keys()):
        if before.get(name) != now.get(name):
            change = "added" if name not in before else "removed" if name not in now else "edited"
            raise BadInput(f"{what} '{spec}': {read.root.parent / name if read.root.is_dir() else read.root} was "
                           f"{change} after it was first read in this run: the code tested and certified would "
                           "not be the code shipped; run again once it is final")


def adopt(shipments: tuple[Shipment, ...]) -> None:
    """Take another process's shipments as this one's (a worker of a spread run ships its parent's bytes)."""
    for read in shipments:
        _READ.setdefault(read.root, read)


def shipments() -> tuple[Shipment, ...]:
    """Every shipment this process read, for its worker processes."""
    return tuple(_READ.values())


def pack(root: Path, what: str, spec: str) -> Shipment:
    """Read `root` (a file, or a package folder) into the bytes to ship; BadInput when they would not fit
    in one write through the relay."""
    if root.is_dir():
        packed = _zipped(root)
    else:
        data = root.read_bytes()
        packed = Shipment(root, root.name, data, ((root.name, hashlib.sha256(data).hexdigest()),))
    if len(packed.data) > MAX_WRITE:
        raise BadInput(f"{what} '{spec}': {packed.name} is {len(packed.data):,} bytes to ship, over the relay's "
                       f"limit of {MAX_WRITE:,} bytes ({MAX_WRITE // 1024} KiB); ship only the code the driver "
                       "imports (data files and vendored libraries belong in the image or a volume)")
    return packed


def package_files(package: Path) -> list[Path]:
    """The package's files, sorted, without bytecode."""
    found = []
    for folder, folders, names in os.walk(package):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        found += [Path(folder) / name for name in sorted(names) if not name.endswith((".pyc", ".pyo"))]
    return found


def _hashes(root: Path) -> list[tuple[str, str]]:
    """(name, sha256) of the file `root`, or of every file of the package `root`, as they are now."""
    if not root.is_dir():
        return [(root.name, hashlib.sha256(root.read_bytes()).hexdigest())] if root.is_file() else []
    return [(path.relative_to(root.parent).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest())
            for path in package_files(root)]


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
