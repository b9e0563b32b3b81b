"""End-to-end latency of live input: from a record's acknowledged send to its result written to the
output (the output record's broker timestamp), for outputs that carry their input's identity. A
transactional sink's output becomes visible at its commit, up to a batch after it was written."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from harness.client.records import Records


def end_to_end(records: Records, identities: Iterable[str], acked_ms: Mapping[str, int]) -> dict | None:
    """Median and 99th percentile over the run, and median and max per second of output; None when no
    output identity is an input's (an aggregation's results are not input records)."""
    per_second: dict[int, list[int]] = {}
    for written, identity in zip(records.timestamps, identities, strict=True):
        sent = acked_ms.get(identity)
        if sent is not None:
            per_second.setdefault(written // 1000, []).append(written - sent)
    if not per_second:
        return None
    every = sorted(ms for values in per_second.values() for ms in values)
    return {
        "measured": len(every),
        "median_ms": int(statistics.median(every)),
        "p99_ms": every[min(len(every) - 1, int(len(every) * 0.99))],
        "per_second": [[second, int(statistics.median(values)), max(values)]
                       for second, values in sorted(per_second.items())],
    }
