"""Every object the S3 server said it wrote, so that a second write of one is seen: a table's data files
and commit objects are written once under names made to be unique, and a committed file written again is
the table changed under its snapshot (a replayed task reusing a committed file's name, say). The history
gets an `s3.overwrite` for it (evidence that explanations cite; never a verdict by itself: a file written
again with the same bytes changes nothing a reader sees)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness.gate.points import Peer

WRITES = frozenset({"s3.put", "s3.complete_upload", "s3.copy"})  # the request kinds that write an object


@dataclass(frozen=True)
class Written:
    at: float  # the time of its 2xx answer
    by: str  # "container (role)"


class ObjectWrites:
    """The objects written through the gate (bucket/key -> its first write), for the gate's whole life: the
    store's keys are a scenario's own (each scenario has its table and namespace)."""

    def __init__(self) -> None:
        self._first: dict[str, Written] = {}

    def answered(self, bucket: str, key: str, status: int, peer: Peer) -> dict | None:
        """One write's answer; the fields of an `s3.overwrite` event when it wrote an object written before."""
        if not 200 <= status < 300:
            return None
        where = f"{bucket}/{key}"
        now = Written(time.time(), f"{peer.container} ({peer.role})")
        first = self._first.setdefault(where, now)
        if first is now:
            return None
        return {"bucket": bucket, "key": key, "first_at": first.at, "first_by": first.by, "by": now.by}
