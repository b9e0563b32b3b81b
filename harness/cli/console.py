"""What the commands print: a plain-text table of scenario outcomes."""

from __future__ import annotations

from harness.run.scenario_result import ScenarioResult


def table(results: list[ScenarioResult]) -> str:
    """A plain-text table: one row per scenario, its outcome from the judge (harness.checker.judge)."""
    header = f"{'scenario':<14} {'outcome':<11} {'guarantee':<14} {'expected':>9} {'read':>9} {'anomalies'}"
    rows = [header, "-" * len(header)]
    for r in results:
        found = ", ".join(f"{a.name}={a.count}" for a in r.verdict.anomalies.values()) or "-"
        rows.append(
            f"{r.name:<14} {r.outcome:<11} {r.verdict.guarantee:<14} "
            f"{r.verdict.expected:>9} {r.verdict.observed:>9} {found}"
        )
        if r.judgement and r.judgement.reasons:
            rows.append(f"{'':<14} why: {'; '.join(r.judgement.reasons)}")
    return "\n".join(rows)
