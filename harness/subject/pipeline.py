"""Loads a pipeline on the host: where its code is, its input, and the oracle that judges its output.

Only `transform(source) -> DataFrame` is required (it runs in the driver). Optional:
- `workload(seed, n)`: the pipeline's own n input records as (key, value bytes, timestamp_ms) tuples,
  the same for the same seed; without it, the harness's workload (JSON with id, key, seq, ts, amount);
- `model(inputs)` and `identity(value)`: the exact oracle. The model sees the harness workload's records
  as dicts, or a pipeline's own inputs as InputRecords. Without them the oracle is differential: the
  output is compared with a fault-free run's (see harness.checker.differential);
- `identities(values)`: the batch form of `identity` (a list of record values in, their identities out),
  for speed where a pipeline's output is large;
- `checkers()` (default: every identity exactly once, and per-key order when `ORDERED_BY_KEY`),
  `WORKLOAD` (Workload fields the model needs, e.g. event-time spacing), `OUTPUT_MODE` ("update" for
  a changelog).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice

from harness.checker import ExactlyOnceChecker, Expected, OutputCheck, PerKeyOrderChecker
from harness.checker.compose import Checker
from harness.checker.differential import APPEND, UPDATE
from harness.client.workload import InputRecord, Workload
from harness.errors import BadInput
from harness.subject.code_spec import CodeSpec, import_code, locate

CHECKED_RECORDS = 100  # of a pipeline's own workload, checked when it loads


@dataclass(frozen=True)
class Pipeline:
    """A pipeline as the harness sees it: the code the driver runs, its input and its oracle."""

    name: str
    code: CodeSpec
    model: Callable[[Iterable], dict[str, Expected]] | None
    identity: Callable[[bytes], str] | None
    ordered_by_key: bool = False
    own_checkers: Callable[[], list[Checker]] | None = None
    workload_settings: Mapping[str, object] = field(default_factory=dict)
    own_workload: Callable[[int, int], Iterable] | None = None
    output_mode: str = APPEND
    identities: Callable[[list[bytes]], list[str]] | None = None

    @property
    def differential(self) -> bool:
        """No model: judged against its own fault-free output."""
        return self.model is None

    @property
    def oracle(self) -> str:
        return "differential" if self.differential else "model"

    def checkers(self) -> list[Checker]:
        """Fresh checkers for one output."""
        if self.own_checkers is not None:
            return self.own_checkers()
        checkers: list[Checker] = [ExactlyOnceChecker()]
        if self.ordered_by_key:
            checkers.append(PerKeyOrderChecker())
        return checkers

    def output_check(self, expected: Mapping[str, Expected], required: Collection[str] | None = None,
                     ordered: bool = True) -> OutputCheck:
        """The exact oracle for one output: this pipeline's checkers against its model's expectations
        (`ordered`: the output's partitions are sequences, harness.checker.compose.OutputCheck)."""
        assert self.identity is not None, "a differential pipeline has no model"
        return OutputCheck(self.checkers(), expected, self.identity, required, self.identities, ordered)

    def workload(self, workload: Workload) -> Workload:
        """The workload with the settings this pipeline's model relies on."""
        return dataclasses.replace(workload, **self.workload_settings)

    def inputs(self, workload: Workload) -> Iterator[InputRecord]:
        """The records to produce: the pipeline's own workload, or the harness's."""
        if self.own_workload is None:
            return workload.inputs()
        return self._own_inputs(workload.seed, workload.records)

    def expected(self, inputs: Iterable[InputRecord]) -> dict[str, Expected]:
        """The model's expectations of these inputs (in produce order)."""
        assert self.model is not None, "a differential pipeline has no model"
        if self.own_workload is not None:
            return self.model(inputs)
        return self.model(json.loads(record.value) for record in inputs)

    def _own_inputs(self, seed: int, records: int) -> Iterator[InputRecord]:
        assert self.own_workload is not None
        try:
            produced = iter(self.own_workload(seed, records))
        except Exception as error:  # noqa: BLE001 - the user's workload
            raise BadInput(f"pipeline '{self.name}': workload({seed}, {records}) raised {error!r}") from None
        for n, item in enumerate(produced):
            yield InputRecord(f"{seed}-{n:09d}", *_input_record(self.name, n, item))


def _input_record(name: str, n: int, item: object) -> tuple[bytes | None, bytes, int]:
    """(key bytes or None, value bytes, timestamp ms) of the nth record a pipeline's workload yields."""
    if isinstance(item, tuple) and len(item) == 3:
        key, value, timestamp = item
        if isinstance(key, str):
            key = key.encode()
        if (key is None or isinstance(key, bytes)) and isinstance(value, bytes) and isinstance(timestamp, int) \
                and not isinstance(timestamp, bool) and timestamp >= 0:
            return key, value, timestamp
    raise BadInput(f"pipeline '{name}': workload record {n} is {item!r:.100}, not a (key: str | bytes | None, "
                   "value: bytes, timestamp_ms: int) tuple")


def load_pipeline(spec: str) -> Pipeline:
    """Import a pipeline (dotted module or file.py); BadInput naming it when it does not import or lacks
    the contract."""
    code = locate(spec, "pipeline")
    module = import_code(code, "pipeline")
    if not callable(getattr(module, "transform", None)):
        raise BadInput(f"pipeline '{spec}' has no transform(source) -> DataFrame (see docs/guides/pipelines.md)")
    model, identity = getattr(module, "model", None), getattr(module, "identity", None)
    if (model is None) != (identity is None) or not all(map(callable, filter(None, (model, identity)))):
        raise BadInput(f"pipeline '{spec}': give both model(inputs) and identity(value) functions, or neither "
                       "(then its output is checked against a fault-free run)")
    settings = dict(getattr(module, "WORKLOAD", {}))
    unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(Workload)})
    if unknown:
        raise BadInput(f"pipeline '{spec}': WORKLOAD has fields a workload does not: {', '.join(unknown)}")
    own_workload = getattr(module, "workload", None)
    if own_workload is not None and not callable(own_workload):
        raise BadInput(f"pipeline '{spec}': workload must be a function workload(seed, n)")
    mode = getattr(module, "OUTPUT_MODE", None) or APPEND
    if mode not in (APPEND, UPDATE, "complete"):
        raise BadInput(f"pipeline '{spec}': OUTPUT_MODE '{mode}' is not append, update or complete")
    pipeline = Pipeline(spec, code, model, identity, bool(getattr(module, "ORDERED_BY_KEY", False)),
                        getattr(module, "checkers", None), settings, own_workload,
                        APPEND if mode == APPEND else UPDATE, getattr(module, "identities", None))
    if own_workload is not None:
        list(islice(pipeline.inputs(Workload(CHECKED_RECORDS)), CHECKED_RECORDS))  # bad records fail here
    return pipeline
