"""`shrink`: a failing scenario replayed smaller until nothing smaller fails the same way, then written
out as a pytest reproducer.

Smaller means one fault of two, half the records, an earlier occurrence, fewer partitions. A smaller
version is kept only when it fails with one of the original's anomalies twice in a row (a version that
passes once is dropped at once, without its second run). The original is replayed twice first: when it
does not fail twice it is flaky: its own report and the replays' are said, each with its history.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.checker.verdict import FAIL
from harness.driver.state_stores import DEFAULT_STATE_STORE
from harness.errors import BadInput
from harness.faults.spec import BATCH_POINTS, parse_step
from harness.progress import say
from harness.run.scenario import batch_size
from harness.run.scenario_result import ScenarioResult
from harness.subject.dependencies import Dependencies

MIN_RECORDS = 1_000
IGNORED = {"vacuous"}  # the judge's, not the sink's: a fault that did not fire is no reproduction


@dataclass(frozen=True)
class Replay:
    """What a scenario ran, as `scenario()` takes it, read back from its history's first event."""

    pipeline: str
    sink: str
    faults: tuple[str, ...]
    records: int
    seed: int
    partitions: int
    rate: float = 0.0
    state_store: str = DEFAULT_STATE_STORE
    speculation: bool = False
    max_offsets_per_trigger: int | None = None  # None: the scenario's own for its records
    brokers: int = 1  # Kafka brokers it ran on: its replays get as many (a coordinator fault needs several)
    restarts: int | None = None  # a failed query's restarts it allowed (None: the setting's, for older histories)
    output: str = "kafka"  # where the sink wrote (harness.output): its replays write there too
    store: str | None = None  # where its table lived (`--store`; None: a topic, or the default)
    spark: str | None = None  # the releases it ran on (its result's `versions`): its replays run on them too
    iceberg: str | None = None
    dependencies: Dependencies | None = None  # what shipped with its sink, as it was asked for

    @classmethod
    def from_report(cls, folder: Path) -> Replay:
        history = folder / "history.jsonl"
        if not history.is_file():
            raise BadInput(f"{folder} is not a scenario's report folder (no history.jsonl)")
        with history.open() as lines:
            start = json.loads(lines.readline() or "{}")
        if start.get("type") != "scenario.start" or "partitions" not in start:
            raise BadInput(f"{history} does not say how its scenario ran (written by an older harness?)")
        workload = start["workload"]
        given, partitions = start["max_offsets_per_trigger"], start["partitions"]
        result = folder / "result.json"
        ran = json.loads(result.read_text()).get("versions", {}) if result.is_file() else {}
        return cls(start.get("pipeline_spec", start["pipeline"]), start["sink"], tuple(start["faults"]),
                   workload["records"], workload["seed"], partitions, start["rate"], start["state_store"],
                   start["speculation"], None if given == batch_size(workload["records"], partitions) else given,
                   start.get("brokers", 1), start.get("restarts"), start.get("output", "kafka"), start.get("store"),
                   ran.get("spark"), ran.get("iceberg") if start.get("output") == "iceberg" else None,
                   _dependencies(start.get("dependencies_asked")))

    def options(self) -> dict[str, object]:
        """Keyword arguments of `scenario()` (and of the `eo_scenario` fixture)."""
        return {"pipeline": self.pipeline, "sink": self.sink, "faults": list(self.faults), "records": self.records,
                "seed": self.seed, "partitions": self.partitions, "rate": self.rate,
                "state_store": self.state_store, "speculation": self.speculation,
                "max_offsets_per_trigger": self.max_offsets_per_trigger,
                **({"restarts": self.restarts} if self.restarts is not None else {}),
                **({"output": self.output} if self.output != "kafka" else {}),
                **({"store": self.store} if self.store else {}),
                **({"dependencies": self.dependencies} if self.dependencies else {})}

    def describe(self) -> str:
        partitions = f"{self.partitions} partition{'s' if self.partitions != 1 else ''}"
        brokers = f" on {self.brokers} brokers" if self.brokers > 1 else ""
        output = f", into {self.output}" + (f" on {self.store}" if self.store else "") if self.output != "kafka" else ""
        return f"{self.records} records, {partitions}, faults [{', '.join(self.faults)}]{brokers}{output}"

    def smaller(self) -> list[tuple[str, Replay]]:
        """Each one-step smaller version, with what was made smaller; the largest cuts first."""
        out: list[tuple[str, Replay]] = []
        if len(self.faults) > 1:
            out += [(f"without {spec}", replace(self, faults=_without(self.faults, i)))
                    for i, spec in enumerate(self.faults)]
        if self.records >= 2 * MIN_RECORDS:
            out.append((f"records {self.records} -> {self.records // 2}", replace(self, records=self.records // 2)))
        for i, spec in enumerate(self.faults):
            for earlier in _earlier(spec):
                out.append((f"{spec} -> {earlier}", replace(self, faults=self.faults[:i] + (earlier,)
                                                            + self.faults[i + 1:])))
        if self.partitions > 1:
            out.append((f"partitions {self.partitions} -> {self.partitions // 2}",
                        replace(self, partitions=self.partitions // 2)))
        return out


def _dependencies(asked: dict | None) -> Dependencies | None:
    """What a history says shipped with its sink, as it was asked for (None: nothing, or an older history)."""
    if not asked:
        return None
    return Dependencies(tuple(asked["python"]), tuple(asked["packages"]), tuple(sorted(asked["conf"].items())))


def _without(faults: tuple[str, ...], index: int) -> tuple[str, ...]:
    """The faults without one. Without the first, a `then` step after it counts its occurrences from
    the stream's start (a schedule cannot begin with `then`); elsewhere it follows the step before."""
    rest = faults[:index] + faults[index + 1:]
    if rest and parse_step(rest[0]).after:
        rest = (str(replace(parse_step(rest[0]), after=False)),) + rest[1:]
    return rest


def _earlier(spec: str) -> list[str]:
    """The fault at its point's first, half-way and previous occurrence (batch id for batch points)."""
    step = parse_step(spec)
    if step.point in BATCH_POINTS:
        number = int(step.number or 1)
        return [str(replace(step, number=float(n))) for n in sorted({1, number // 2, number - 1}) if 1 <= n < number]
    return [str(replace(step, nth=n)) for n in sorted({1, step.nth // 2, step.nth - 1}) if 1 <= n < step.nth]


@dataclass
class Shrunk:
    """What shrinking found: the smallest replay that still fails, and everything tried."""

    original: Replay
    kinds: frozenset[str]  # the original's anomalies
    smallest: Replay | None = None  # None: its failure did not come back twice in a row (flaky)
    tried: list[tuple[str, list[str]]] = field(default_factory=list)  # (what, each replay's outcome and anomalies)
    replays: list[str] = field(default_factory=list)  # the original's replays' report folders

    @property
    def status(self) -> str:
        """shrunk; or flaky: the original's failure did not come back in two replays in a row."""
        return "shrunk" if self.smallest is not None else "flaky"


Run = Callable[[Replay, str], ScenarioResult]  # a replay and a scenario name -> its result


def anomaly_kinds(result: dict) -> frozenset[str]:
    """The anomalies of a scenario's result.json, the judge's own left out."""
    return frozenset(result["verdict"]["anomalies"]) - IGNORED


def shrink(original: Replay, kinds: frozenset[str], run: Run) -> Shrunk:
    """Replay the original twice, then the smaller versions, keeping each one that fails the same way twice."""
    found = Shrunk(original, kinds)
    confirmed, found.replays = _twice(original, "original", found, run, "shrink-original")
    if not confirmed:
        return found
    current, step = original, 0
    while True:
        for what, candidate in current.smaller():
            step += 1
            kept, _ = _twice(candidate, what, found, run, f"shrink-{step}")
            if kept:
                current = candidate
                break
        else:
            found.smallest = current
            return found


def _twice(replay: Replay, what: str, found: Shrunk, run: Run, name: str) -> tuple[bool, list[str]]:
    """Whether `replay` fails with one of the original's anomalies twice in a row (stopping at a pass)."""
    outcomes, reports = [], []
    for attempt in (1, 2):
        result = run(replay, f"{name}-{attempt}")
        shown = {k: a.count for k, a in result.verdict.anomalies.items() if k not in IGNORED}
        outcomes.append(f"{result.outcome} {', '.join(f'{k}={v}' for k, v in shown.items())}".strip())
        reports.append(str(result.report_dir))
        same = result.outcome == FAIL and bool(set(shown) & found.kinds)
        if not same:
            break
    found.tried.append((what, outcomes))
    kept = len(outcomes) == 2 and same
    say(f"shrink: {what}: {'; '.join(outcomes)} -> {'kept' if kept else 'not kept'} ({replay.describe()})")
    return kept, reports


def reproducer(found: Shrunk, source: Path) -> tuple[str, str]:
    """(file name, text) of a pytest test that fails while the bug is there and passes once it is fixed."""
    smallest = found.smallest
    assert smallest is not None
    options = smallest.options()
    identity = json.dumps({**options, "brokers": smallest.brokers}, sort_keys=True, default=repr)
    short = hashlib.sha256(identity.encode()).hexdigest()[:8]
    sink, pipeline = options.pop("sink"), options.pop("pipeline")
    arguments = ",\n                         ".join(f"{k}={v!r}" for k, v in options.items())
    # the test's cluster: as many brokers as the original had, its releases (eo_scenario honours the markers)
    brokers = (f"\n@pytest.mark.brokers({smallest.brokers})" if smallest.brokers > 1 else "") + "".join(
        f"\n@pytest.mark.{name}({release!r})" for name, release in (("spark", smallest.spark),
                                                                  ("iceberg", smallest.iceberg)) if release)
    text = f'''"""Reproduces {', '.join(sorted(found.kinds))} of sink {sink} with pipeline {pipeline}, shrunk by
`eo-harness shrink` from {source}:
{found.original.describe()}
-> {smallest.describe()}.
It fails while the bug is there and passes once the sink is fixed: pytest -m chaos {f"test_repro_{short}.py"}
(SINK names the sink under test; run it from the folder the original ran in, for paths). A fix that never
reaches the fault's point (a plain sink made transactional sends no plain produce request) is skipped:
the reproducer no longer applies to it, which is not a pass."""

import pytest
{"from harness.subject.dependencies import Dependencies" + chr(10) if smallest.dependencies else ""}
SINK = {sink!r}
PIPELINE = {pipeline!r}


@pytest.mark.chaos{brokers}
def test_repro_{short}(eo_scenario):
    result = eo_scenario(pipeline=PIPELINE, sink=SINK,
                         {arguments})
    if set(result.verdict.anomalies) == {{"vacuous"}}:
        pytest.skip(f"the fault never fired with {{SINK}}: its point does not occur there ({{result.summary()}})")
    assert result.outcome == "pass", result.summary()
'''
    return f"test_repro_{short}.py", text
