"""Spark's file sink log (`<folder>/_spark_metadata`): the files each batch committed. Spark writes
`<batch>` for a batch, one JSON line per file after a `v1` header, and every tenth batch `<batch>.compact`
with every file so far; a reader that honours the log (Spark's own) sees those files only, never what a
failed or replayed task left in the folder. Pure logic: the reader hands it names and texts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

LOG = "_spark_metadata"
ENTRY = re.compile(r"^([0-9]+)(\.compact)?$")  # a batch's log file; Spark's temporary files are dot files
VERSION = "v1"
MAX_ENTRY_BYTES = 1 << 20  # a log file's text is the sink's: one past this is refused, not parsed


class LogError(ValueError):
    """A log file that is not Spark's file sink log (the sink's to answer for)."""


@dataclass(frozen=True)
class Entry:
    path: str  # the data file, as a path on the folder's file system
    modified_ms: int


def batches(names: list[str]) -> dict[int, str]:
    """The log's batches and each one's file name (a compaction's `.compact` named over a plain one)."""
    found: dict[int, str] = {}
    for name in names:
        if (match := ENTRY.match(name)) and (int(match[1]) not in found or match[2]):
            found[int(match[1])] = name
    return dict(sorted(found.items()))


def parse(text: str, folder: str) -> list[tuple[str, Entry]]:
    """One log file's actions, in order: (`add` or `delete`, the file). A file outside `folder` is refused."""
    if len(text) > MAX_ENTRY_BYTES:
        raise LogError(f"a log file of {len(text)} characters (at most {MAX_ENTRY_BYTES})")
    header, _, body = text.partition("\n")
    if header.strip() != VERSION:
        raise LogError(f"a log file whose first line is {header[:40]!r}, not {VERSION!r}")
    actions = []
    for line in filter(None, (line.strip() for line in body.splitlines())):
        try:
            status = json.loads(line)
            path = unquote(urlparse(status["path"]).path)
            action, modified = status["action"], int(status.get("modificationTime", 0))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise LogError(f"a log line that is no file status ({type(error).__name__}): {line[:120]!r}") from None
        if action not in ("add", "delete") or not path.startswith(folder.rstrip("/") + "/") or "/../" in path:
            raise LogError(f"a log line naming {action!r} of {path!r}, not a file of {folder}")
        actions.append((action, Entry(path, modified)))
    return actions


def history(log: Mapping[int, str], text_of: Callable[[str], str],
            folder: str) -> Iterator[tuple[int, dict[str, Entry]]]:
    """Each batch of `log`, in order, with the files committed as of it: each log file read once, a compaction
    starting the files again from its own."""
    files: dict[str, Entry] = {}
    for batch, name in log.items():
        files = {} if name.endswith(".compact") else dict(files)
        for action, entry in parse(text_of(name), folder):
            if action == "add":
                files[entry.path] = entry
            else:
                files.pop(entry.path, None)
        yield batch, files


def files_at(log: Mapping[int, str], batch: int, text_of: Callable[[str], str], folder: str) -> dict[str, Entry]:
    """The files committed as of `batch`: its latest compaction's, then each later batch's actions."""
    start = max((b for b, name in log.items() if b <= batch and name.endswith(".compact")), default=0)
    files: dict[str, Entry] = {}
    for _, now in history({b: name for b, name in log.items() if start <= b <= batch}, text_of, folder):
        files = now
    return files
