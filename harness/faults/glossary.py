"""The glossary's three names for one fault: the class (`kill:sender@txn.commit/instant`, in certificates),
the row that tries it (`kill-sender-txn.commit`, a test id) and the steps a user writes (`kill:sender@txn.commit#1`).
A class or row name pasted where a step belongs is answered with the steps to write instead."""

from __future__ import annotations

from collections.abc import Sequence

from harness.errors import BadInput
from harness.faults.fault_class import DEFAULT_TRANSACTION_TIMEOUT_S
from harness.faults.space import MIN_BROKERS, FaultClass, Observation, space
from harness.faults.spec import PLAIN, TABLE, TRANSACTIONAL, FaultStep, parse_schedule
from harness.output.registry import table_stores


def every_class() -> list[FaultClass]:
    """Every class a sink of any kind can get (a stateful pipeline, enough brokers), each name once."""
    found: dict[str, FaultClass] = {}
    seen = [Observation.assumed(kind, stateful=True, brokers=MIN_BROKERS) for kind in (TRANSACTIONAL, PLAIN)]
    seen += [Observation.assumed(TABLE, stateful=True, brokers=MIN_BROKERS, output=table.name)
             for table in table_stores()]
    for observation in seen:
        for fault in space(observation):
            found.setdefault(fault.name, fault)
    return list(found.values())


def _named(text: str) -> tuple[FaultClass, str] | None:
    """The class `text` names (as a class, with or without its sender role, or as its row), and the role."""
    head, _, timing = text.partition("/")
    head, _, role = head.partition("~")
    for fault in every_class():
        if text in (fault.row, fault.name):
            return fault, ""
        if f"{head}/{timing}" == fault.name and role in ("driver", "executors"):  # a class split by sender
            return fault, role
    return None


def instead_of_step(text: str) -> str | None:
    """What to write instead when `text` is a class or row name rather than a fault step; None otherwise."""
    named = _named(text.strip())
    if named is None:
        return None
    fault, role = named
    steps = [f"--fault '{step}{f'~{role}' if role else ''}'" for step in fault.faults]
    steps += [f"--brokers {fault.brokers}"] if fault.brokers > 1 and fault.faults else []
    kind = f"'{text}' is the name of a fault class or of the row that tries it, not a step"
    if fault.speculation:
        return (f"{kind}: its row runs with spark.speculation on, which only `eo-harness certify` (or explore) "
                f"sets; the step alone is {' '.join(steps)}")
    if fault.live:
        return f"{kind}: write {' '.join([*steps, '--input-rate 2000'])} (live input)"
    if not fault.faults:
        return f"{kind}: no step tries it yet"
    timeout = f"{DEFAULT_TRANSACTION_TIMEOUT_S:g} s"
    return (f"{kind}: write {' '.join(steps)} (durations for a {timeout} transaction timeout; `eo-harness space "
            "--sink ...` prints your sink's)")


def parse_steps(specs: Sequence[str]) -> list[FaultStep]:
    """The steps of `specs`; bad input says what to write instead when a spec is a class or row name."""
    try:
        return parse_schedule(list(specs))
    except BadInput as error:
        instead = next(filter(None, (instead_of_step(spec) for spec in specs)), None)
        raise BadInput(instead or str(error)) from None
