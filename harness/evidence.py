"""Evidence on disk (reports, certificates, indexes, tracebacks) written whole or not at all: a temporary
file in the same folder, synced, then renamed over the target, so a crash leaves the old file or the new
one, never a torn one. A folder that cannot be written is the infrastructure's failure, said in one line."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness.errors import BadInput, InfrastructureError

MODE = 0o644  # as a plain write leaves it: reports are read by whoever serves or collects them


def write_evidence(path: Path, content: str | bytes) -> Path:
    """Write `path` atomically (its folder made), over what was there; InfrastructureError naming it when
    the disk refuses."""
    return _put(path, content, os.replace)


def write_new_evidence(path: Path, content: str | bytes) -> Path:
    """Write `path` atomically when nothing is there; BadInput when something is (evidence is never
    overwritten, even by another process writing the same name at the same time)."""
    return _put(path, content, os.link)


def _put(path: Path, content: str | bytes, place: Callable[[str, Path], None]) -> Path:
    """A synced temporary file beside `path`, then `place`d there (os.replace: over an old file; os.link:
    only where there is none); the temporary file never stays."""
    data = content.encode() if isinstance(content, str) else content
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, staged = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
        try:
            os.fchmod(descriptor, MODE)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            try:
                place(staged, path)
            except FileExistsError:
                raise BadInput(f"{path} exists already: evidence is never overwritten (choose another place)") \
                    from None
        finally:
            if os.path.lexists(staged):
                os.unlink(staged)
    except OSError as error:
        raise unwritable(path, error) from None
    return path


def unique_path(folder: Path, stem: str, suffix: str) -> Path:
    """A new, empty file `folder/stem<suffix>` (or `stem-2<suffix>`, ...), created so no other process can
    take the same name; InfrastructureError when the folder cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(1, 10_000):
            path = folder / f"{stem}{'' if n == 1 else f'-{n}'}{suffix}"
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                return path
            except FileExistsError:
                continue
        raise FileExistsError(f"{folder}/{stem}-*{suffix}: every name is taken")
    except OSError as error:
        raise unwritable(folder, error) from None


def unwritable(path: Path, error: OSError) -> InfrastructureError:
    """The one line for evidence the disk would not take (unwritable, full, not a folder)."""
    return InfrastructureError(f"cannot write {path}: {error.strerror or error} (check that the reports folder "
                               "is writable and has space)")
