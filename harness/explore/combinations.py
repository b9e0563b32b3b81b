"""The combinations `explore` draws from a fault space, beyond the certificate's one row per class.

A certificate tries each class once, at one occurrence. Bugs also sit at another occurrence (the third
commit, a late batch), in two faults together (the second while the stream recovers from the first), at
another input rate, or under another workload. Each combination names the classes it touches, so the
coverage store can say which classes and how many combinations a sink has been tried under.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, replace

from harness.certify.matrix import MatrixScenario
from harness.driver.state_stores import DEFAULT_STATE_STORE
from harness.faults.space import FaultClass, Observation, space
from harness.faults.spec import BATCH_POINTS, parse_step

OCCURRENCE, PAIR, RATE, SEED = "occurrence", "pair", "rate", "seed"
TIERS = (OCCURRENCE, PAIR, RATE, SEED)  # what a search takes first, among combinations tried as often
LIVE_SECONDS = (60.0, 20.0)  # other live rates: the input spread over a minute and over 20 s of the stream
OTHER_SEEDS = 2  # workloads per class besides the certificate's


@dataclass(frozen=True)
class Combination:
    """One scenario a search can run: its fault steps, the classes they try, its input and workload."""

    tier: str
    faults: tuple[str, ...]
    classes: tuple[str, ...]
    live: bool = False
    rate: float | None = None  # live input at this rate (None: the run's own)
    seed_offset: int = 0  # the workload's seed, past the run's
    speculation: bool = False
    state_store: str = DEFAULT_STATE_STORE

    @property
    def key(self) -> str:
        """What identifies it in the coverage store: the same combination is the same key in every run."""
        parts = [" + ".join(self.faults) or "no fault"]
        if self.live:
            parts.append(f"live{'' if self.rate is None else f' at {self.rate:g}/s'}")
        if self.seed_offset:
            parts.append(f"seed +{self.seed_offset}")
        if self.speculation:
            parts.append("speculation")
        if self.state_store != DEFAULT_STATE_STORE:
            parts.append(f"store {self.state_store}")
        return ", ".join(parts)

    def row(self) -> MatrixScenario:
        """The scenario that runs it, named by a short hash of its key and a suffix of its own: names become
        folders, and a session may run the same combination again (a second round, a benchmark's repeat)."""
        short = hashlib.sha256(self.key.encode()).hexdigest()[:8]
        return MatrixScenario(f"explore-{self.tier}-{short}-{uuid.uuid4().hex[:4]}", self.faults, live=self.live,
                              state_store=self.state_store, speculation=self.speculation, classes=self.classes)


def combinations(seen: Observation, batches: int, records: int) -> list[Combination]:
    """Every combination of the space the baseline showed (`batches`: how many it planned; `records`: the
    input's size, which the other live rates are drawn from so that the input still arrives while the
    stream runs: a rate that produces it all before the driver starts is not live)."""
    classes = [fault for fault in space(seen) if fault.tried]
    out: list[Combination] = []
    for fault in classes:
        out += [_single(fault, steps) for steps in _other_occurrences(fault, seen, batches)]
    kills = [fault for fault in classes if fault.action == "kill" and len(fault.faults) == 1 and not fault.live]
    for first in kills:
        for second in kills:
            out.append(Combination(PAIR, (first.faults[0], _after(second.faults[0])), (first.name, second.name)))
    for fault in classes:
        if fault.live:
            out += [replace(_single(fault, fault.faults), tier=RATE, rate=float(max(1, round(records / seconds))))
                    for seconds in LIVE_SECONDS]
        out += [replace(_single(fault, fault.faults), tier=SEED, seed_offset=n) for n in range(1, OTHER_SEEDS + 1)]
    unique: dict[str, Combination] = {}
    for combination in out:
        unique.setdefault(combination.key, combination)
    return list(unique.values())


def _single(fault: FaultClass, steps: tuple[str, ...]) -> Combination:
    return Combination(OCCURRENCE, steps, (fault.name,), fault.live, None, 0, fault.speculation, fault.state_store)


def _other_occurrences(fault: FaultClass, seen: Observation, batches: int) -> list[tuple[str, ...]]:
    """The class's single fault moved to other occurrences of its point: early, middle and late, and once
    in each batch."""
    if len(fault.faults) != 1 or fault.live or fault.speculation:
        return []
    step = parse_step(fault.faults[0])
    if step.point in BATCH_POINTS:
        numbers = _spread(batches - 1, int(step.number or 1))
        return [(str(replace(step, number=float(n))),) for n in numbers]
    if step.point == "time":
        return []
    return [(str(replace(step, nth=n)),) for n in _spread(seen.counts.get(step.point, 0), step.nth, batches)]


def _spread(last: int, current: int, batches: int = 0) -> list[int]:
    """Occurrences 1 .. `last` besides `current` (the first ones, the middle and the last two, and for a
    point seen in each of `batches` batches one in the middle of each batch's share: a bug may sit in every
    other batch, which the first, middle and last may all miss), each next the farthest from those already
    taken: a short search reaches late in the stream as well as early."""
    marks = {1, 2, 3, last // 2, last - 1, last}
    marks |= {int((batch + 0.5) * last / batches) + 1 for batch in range(batches)} if batches else set()
    left = sorted(n for n in marks if 1 <= n <= last and n != current)
    taken, out = [current], []
    while left:
        far = max(left, key=lambda n: (min(abs(n - t) for t in taken), n))
        left.remove(far)
        taken.append(far)
        out.append(far)
    return out


def _after(second: str) -> str:
    """The second fault at its point's first occurrence once the first was carried out (`then`): it lands while the
    stream recovers from the first (the batch run again, a new driver's first transaction)."""
    return str(replace(parse_step(second), number=None, nth=1, after=True))
