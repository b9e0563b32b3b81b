"""Loads a pipeline fixture on the host: its model, its identity function and the checkers it needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType

from harness.checker import ExactlyOnceChecker, Expected, PerKeyOrderChecker
from harness.checker.compose import Checker
from harness.errors import BadInput


@dataclass(frozen=True)
class Pipeline:
    """A pipeline as the harness sees it: a dotted module run by the driver, plus its pure model."""

    name: str
    model: Callable[[Iterable[dict]], dict[str, Expected]]
    identity: Callable[[bytes], str]
    ordered_by_key: bool

    def checkers(self) -> list[Checker]:
        checkers: list[Checker] = [ExactlyOnceChecker()]
        if self.ordered_by_key:
            checkers.append(PerKeyOrderChecker())
        return checkers


def load_pipeline(name: str) -> Pipeline:
    """Import a pipeline module; BadInput naming it when it does not import or lacks the contract."""
    try:
        module: ModuleType = importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's input
        raise BadInput(f"pipeline '{name}' cannot be imported: {error.__class__.__name__}: {error}") from None
    missing = [attr for attr in ("transform", "model", "identity") if not callable(getattr(module, attr, None))]
    if missing:
        raise BadInput(f"pipeline '{name}' lacks {', '.join(missing)} (see fixtures/pipelines/passthrough.py)")
    return Pipeline(name, module.model, module.identity, bool(getattr(module, "ORDERED_BY_KEY", False)))
