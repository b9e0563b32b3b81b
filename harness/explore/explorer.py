"""`explore`: runs combinations of a sink's fault space within a time budget, least tried first.

The baseline decides the space (as for `certify`); every combination that ran is added to the coverage
store, so the next explore of the same code starts where this one stopped. A combination whose fault
did not fire is `ineffective` and stays untried; a failure is kept with its report folder, for `shrink`.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace

from harness import versions
from harness.certify.matrix import BASELINE
from harness.certify.rows import MatrixRun, Row, print_row, run_row, sink_and_pipeline
from harness.checker.verdict import FAIL, PASS
from harness.cluster.topology import Cluster
from harness.explore.combinations import OCCURRENCE, PAIR, TIERS, Combination, combinations
from harness.explore.coverage import CoverageStore, Covered
from harness.faults.space import space
from harness.faults.spec import parse_step
from harness.progress import say
from harness.report.folders import run_report_dir
from harness.settings import FLINK, from_environment


def subject_of(run: MatrixRun, stack: versions.Stack | None = None) -> str:
    """The sink and pipeline as the coverage store knows them: by their source hashes, the output they write
    when not Kafka (and its store when not the volume), the brokers they run on when more than one, and the
    releases (`stack`, default the settings') where not the defaults. A combination tried on one broker is
    not tried on three, nor on a topic when the sink wrote a table, nor on another release."""
    sink, pipeline = sink_and_pipeline(run)
    brokers = from_environment("brokers")
    ran = stack or versions.stack()
    releases = [f"{name} {version}" for name, version, default in (
        ("Kafka", ran.kafka, versions.KAFKA_VERSIONS[0]), ("Spark", ran.spark, versions.SPARK_VERSIONS[0]))
        if version != default]
    if run.engine == FLINK:  # another engine: nothing tried on Spark is tried on Flink
        releases.append(f"Flink {ran.flink}")
    if run.output == "iceberg" and ran.iceberg_asked and ran.iceberg_asked != versions.Stack(
            ran.kafka, ran.spark).iceberg:
        releases.append(f"Iceberg {ran.iceberg_asked}")
    return (f"sink {run.sink} {sink.source_sha256[:16]}, pipeline {pipeline.name} {pipeline.code.source_sha256[:16]}"
            + (f", into {run.output}" if run.output != "kafka" else "")
            + (f" on {run.store}" if run.output != "kafka" and run.store != "volume" else "")
            + (f", on {brokers} brokers" if brokers > 1 else "")
            + (f", on {', '.join(releases)}" if releases else ""))


def ordered(candidates: list[Combination], tried: Counter[str], seed: int = 1) -> list[Combination]:
    """Least tried first. Among those tried as often, the tiers take turns (an occurrence, a pair, a rate, a
    seed, again), so that a short budget samples every kind; within the occurrences the classes take
    turns (one of each class's before any class's second), class n beginning n places into its list
    (farthest first), so that a round over the classes faults many places in the stream, not every class
    the same last batch; the pairs come in an order shuffled by `seed`, those whose second fault hits the
    target of the first (the driver lost again while it recovers) first: a recovery's own recovery is
    where such bugs live."""
    tiers: dict[str, list[Combination]] = {tier: [] for tier in TIERS}
    for combination in candidates:
        tiers[combination.tier].append(combination)
    by_class: dict[tuple[str, ...], list[Combination]] = {}
    for combination in tiers[OCCURRENCE]:
        by_class.setdefault(combination.classes, []).append(combination)
    place = {}  # an occurrence's turn (its class's first, second, ...), then its class's place
    for n, occurrences in enumerate(by_class.values()):
        start = n % len(occurrences)  # class n begins n places into its list: a round spreads over the stream
        for turn, combination in enumerate(occurrences[start:] + occurrences[:start]):
            place[combination.key] = (turn, n)
    tiers[OCCURRENCE].sort(key=lambda c: place[c.key])
    random.Random(seed).shuffle(tiers[PAIR])
    tiers[PAIR].sort(key=lambda c: not same_target(c))  # a fault to what is recovering from one first
    mixed: list[Combination] = []
    while any(tiers.values()):
        mixed += [tiers[tier].pop(0) for tier in TIERS if tiers[tier]]
    return sorted(mixed, key=lambda c: tried[c.key])  # stable: the turns stay within each count


def same_target(combination: Combination) -> bool:
    """Whether both faults of a pair hit the same kind of target."""
    first, second = (parse_step(spec) for spec in combination.faults)
    return first.target == second.target


@dataclass
class Exploration:
    """What one explore ran, and what the store holds after it."""

    subject: str
    classes: int  # applicable classes in the space
    combinations: int  # combinations drawn from it
    baseline_consume_s: float = 0.0  # how long the baseline's stream ran
    rows: list[tuple[Combination, Row]] = field(default_factory=list)
    covered: Covered | None = None
    seconds: float = 0.0

    @property
    def failures(self) -> list[tuple[Combination, Row]]:
        return [(c, row) for c, row in self.rows if row.outcome == FAIL]

    def per_hour(self) -> float:
        return len(self.rows) / self.seconds * 3600 if self.seconds else 0.0

    def progress(self) -> str:
        covered = self.covered
        assert covered is not None
        return (f"classes covered {len(covered.classes)}/{self.classes}, combinations {covered.combinations}/"
                f"{self.combinations}, {self.per_hour():.0f} scenarios/h, failures {len(self.failures)}")


def explore(cluster: Cluster, run: MatrixRun, budget_s: float, store: CoverageStore,
            stop_at_first: bool = False, max_runs: int | None = None, worker: str = "w0") -> Exploration:
    """The baseline, then combinations until the budget would be overrun (the next is started only when
    a scenario as long as the median so far still fits), or `max_runs` combinations ran. Each is claimed
    in the store first, so that workers sharing it never run the same one at once."""
    started = time.monotonic()
    subject = subject_of(run, cluster.images.stack)
    row, result = run_row(cluster, run, replace(BASELINE, name=f"explore-baseline-{uuid.uuid4().hex[:4]}"))
    print_row(row, 1, None)
    if result is None or row.outcome != PASS:
        raise BaselineFailed(row)
    seen = result.observation
    candidates = combinations(seen, len(result.batches_planned), run.records)
    found = Exploration(subject, sum(c.tried for c in space(seen)), len(candidates),
                        baseline_consume_s=result.seconds.get("consume", row.seconds))
    tried = store.tried(subject)
    failed_before = store.covered(subject).failures
    by_key = {c.key: c for c in candidates}
    say(f"explore {subject}: {found.classes} classes, {len(candidates)} combinations, "
        f"{sum(1 for c in candidates if not tried[c.key])} never tried; budget {budget_s / 60:.1f} min")
    lengths = [row.seconds]
    while max_runs is None or len(found.rows) < max_runs:
        if time.monotonic() - started + statistics.median(lengths) > budget_s:
            break
        # the plan again each time: other workers' runs since change what is least tried
        key = store.claim(subject, [c.key for c in ordered(candidates, store.tried(subject), run.seed)], worker)
        if key is None:  # every combination is running on another worker
            break
        combination = by_key[key]
        outcome = run_combination(cluster, run, combination)
        lengths.append(outcome.seconds)
        store.add(subject, combination.key, combination.classes, outcome.outcome, outcome.anomalies, outcome.seconds,
                  str(run_report_dir(cluster.run_id) / outcome.report))
        found.rows.append((combination, outcome))
        found.seconds = time.monotonic() - started
        found.covered = store.covered(subject)
        print_row(replace(outcome, scenario=replace(outcome.scenario, name=combination.key[:42])),
                  len(found.rows) + 1, None)
        say(found.progress())
        if stop_at_first and found.covered.failures > failed_before:  # this worker's failure, or another's
            break
    found.seconds = time.monotonic() - started
    found.covered = store.covered(subject)
    return found


def run_combination(cluster: Cluster, run: MatrixRun, combination: Combination) -> Row:
    """One combination as a scenario: its rate and seed over the run's."""
    own = replace(run, seed=run.seed + combination.seed_offset,
                  rate=combination.rate if combination.rate is not None else run.rate)
    outcome, _ = run_row(cluster, own, combination.row())
    return outcome


class BaselineFailed(Exception):
    """The fault-free baseline did not pass: there is no space to explore."""

    def __init__(self, row: Row) -> None:
        super().__init__(f"the baseline was {row.outcome}: {row.error or row.anomalies}")
        self.row = row
