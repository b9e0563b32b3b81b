"""The audit line the lake keeps beside each order, made on the executors with orjson."""

from __future__ import annotations

import orjson


def audit(key: bytes | None, value: bytes | None) -> str:
    """One JSON line naming the record by its sizes (the payload stays in `value`)."""
    return orjson.dumps({"key_bytes": len(key or b""), "value_bytes": len(value or b"")}).decode()
