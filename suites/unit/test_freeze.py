"""`docker pause` tried again where runc could not freeze the cgroup in time, and only then."""

from __future__ import annotations

import pytest
from docker.errors import APIError

from harness.faults import nemesis

pytestmark = pytest.mark.unit


class Container:
    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        self.calls = 0

    def pause(self) -> None:
        self.calls += 1
        if self.errors:
            raise APIError(self.errors.pop(0))


def test_a_cgroup_that_would_not_freeze_is_frozen_on_a_later_try(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nemesis, "FREEZE_RETRY_S", 0.0)
    container = Container(["Cannot pause container x: OCI runtime pause failed: unable to freeze: unknown"] * 2)
    nemesis.freeze(container)  # type: ignore[arg-type]
    assert container.calls == 3


def test_another_error_or_a_freeze_that_never_comes_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nemesis, "FREEZE_RETRY_S", 0.0)
    gone = Container(["No such container: x"])
    with pytest.raises(APIError, match="No such container"):
        nemesis.freeze(gone)  # type: ignore[arg-type]
    assert gone.calls == 1
    stuck = Container(["unable to freeze"] * nemesis.FREEZE_ATTEMPTS)
    with pytest.raises(APIError, match="unable to freeze"):
        nemesis.freeze(stuck)  # type: ignore[arg-type]
    assert stuck.calls == nemesis.FREEZE_ATTEMPTS
