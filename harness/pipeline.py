"""Loads a pipeline fixture on the host: its model, its identity function, the checkers it needs and
the workload settings its model relies on."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

from harness.checker import ExactlyOnceChecker, Expected, PerKeyOrderChecker
from harness.checker.compose import Checker
from harness.errors import BadInput
from harness.workload import Workload


@dataclass(frozen=True)
class Pipeline:
    """A pipeline as the harness sees it: a dotted module run by the driver, plus its pure model.

    Optional in the module: `checkers()` (default: every identity exactly once, and per-key order when
    `ORDERED_BY_KEY`), `WORKLOAD` (Workload fields the model needs, e.g. event-time spacing).
    """

    name: str
    model: Callable[[Iterable[dict]], dict[str, Expected]]
    identity: Callable[[bytes], str]
    ordered_by_key: bool
    own_checkers: Callable[[], list[Checker]] | None = None
    workload_settings: Mapping[str, object] = field(default_factory=dict)

    def checkers(self) -> list[Checker]:
        """Fresh checkers for one output."""
        if self.own_checkers is not None:
            return self.own_checkers()
        checkers: list[Checker] = [ExactlyOnceChecker()]
        if self.ordered_by_key:
            checkers.append(PerKeyOrderChecker())
        return checkers

    def workload(self, workload: Workload) -> Workload:
        """The workload with the settings this pipeline's model relies on."""
        return dataclasses.replace(workload, **self.workload_settings)


def load_pipeline(name: str) -> Pipeline:
    """Import a pipeline module; BadInput naming it when it does not import or lacks the contract."""
    try:
        module: ModuleType = importlib.import_module(name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's input
        raise BadInput(f"pipeline '{name}' cannot be imported: {error.__class__.__name__}: {error}") from None
    missing = [attr for attr in ("transform", "model", "identity") if not callable(getattr(module, attr, None))]
    if missing:
        raise BadInput(f"pipeline '{name}' lacks {', '.join(missing)} (see fixtures/pipelines/passthrough.py)")
    settings = dict(getattr(module, "WORKLOAD", {}))
    unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(Workload)})
    if unknown:
        raise BadInput(f"pipeline '{name}': WORKLOAD has fields a workload does not: {', '.join(unknown)}")
    return Pipeline(name, module.model, module.identity, bool(getattr(module, "ORDERED_BY_KEY", False)),
                    getattr(module, "checkers", None), settings)
