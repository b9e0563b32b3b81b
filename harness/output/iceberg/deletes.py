"""An Iceberg snapshot's position deletes as the rows they remove: each delete file names (data file, row
position) pairs and carries a data sequence number; it applies to a data file of the same or an older data
sequence number (Iceberg's spec, "Scan Planning"), so a file written again after the delete is not touched."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

DeleteRows = tuple[int, list[str], list[int]]  # a delete file's data sequence number, its file_path and pos columns


@dataclass
class PositionDeletes:
    """For each data file, the deleted positions with the newest sequence number of a delete naming each."""

    by_file: dict[str, dict[int, int]] = field(default_factory=dict)  # path -> position -> newest sequence

    def deleted(self, path: str, sequence: int) -> frozenset[int]:
        """The positions of the data file at `path`, of data sequence number `sequence`, deletes remove."""
        return frozenset(position for position, newest in self.by_file.get(path, {}).items() if newest >= sequence)


def position_deletes(files: Iterable[DeleteRows]) -> PositionDeletes:
    """The deletes of a snapshot's delete files."""
    found = PositionDeletes()
    for sequence, paths, positions in files:
        for path, position in zip(paths, positions, strict=True):
            named = found.by_file.setdefault(path, {})
            if named.get(position, -1) < sequence:
                named[position] = sequence
    return found
