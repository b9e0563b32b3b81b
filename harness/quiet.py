"""Imports of a dependency that warns about its own internals: kafka-python loads its protocol schemas
with `importlib.resources.read_text`/`open_text`, 218 DeprecationWarnings on first import. Those, and
only those, are kept out of the user's run (a user's own warnings still show)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

KAFKA_PYTHON_NOISE = r"(open_text|read_text) is deprecated"


@contextmanager
def dependency_noise_hidden() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=KAFKA_PYTHON_NOISE, category=DeprecationWarning)
        yield
