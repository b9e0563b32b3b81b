"""Shrink every known-bad sink and pipeline of the catalog, and check each reproducer both ways.

For each: its first failing scenario (the quick matrix's rows in order, as benchmarks/detect.py; for a
sink whose bug only `explore` finds, explore until its first failure), `shrink` of that scenario, the
reproducer written and run with pytest (its own cluster, beside the benchmark's) as written (it must
fail) and pointed at the fix (the reference sink; for a known-bad pipeline, the pipeline whose model it
shares), where it must pass.

    python benchmarks/shrink.py [--sinks a,b] [--pipelines c] [--records 4000] [--out DIR]

A pipeline refused as nondeterministic before any fault has no failing scenario to shrink: it is said so.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from detect import Search, Subject, known_bad, targeted

from harness.cluster.topology import Cluster
from harness.explore.coverage import CoverageStore
from harness.explore.explorer import explore
from harness.explore.shrink import Replay, Shrunk, anomaly_kinds, reproducer, shrink
from harness.interrupt import run_script
from harness.report.folders import run_report_dir
from harness.run.session import scenario, session
from harness.settings import SETTINGS

FIXED_PIPELINES = {"bad_side_store_dedup": "dedup", "bad_side_store_totals": "running_totals"}  # same model


@dataclass
class Outcome:
    subject: Subject
    found_by: str = "-"
    shrunk: Shrunk | None = None
    reproducer: Path | None = None
    as_written: str = "-"  # pytest's outcome of the reproducer as written (must be failed)
    fixed: str = "-"  # and pointed at the fix (must be passed)
    note: str = ""


def first_failure(cluster: Cluster, subject: Subject, records: int) -> tuple[Path | None, str]:
    """The report folder of the subject's first failing scenario, and what found it."""
    search = Search()
    targeted(cluster, subject, records, search)
    if search.refused:
        return None, search.detected or "refused"
    if search.report:  # a row's report is its page, in the scenario's folder
        return (run_report_dir(cluster.run_id) / search.report).parent, f"quick matrix: {search.detected}"
    found = explore(cluster, subject.run(records), 24 * 3600.0, CoverageStore(Path(tempfile.mkdtemp())),
                    stop_at_first=True, max_runs=20)
    if not found.failures:
        return None, f"not found by the quick matrix nor in {len(found.rows)} explore runs"
    combination, row = found.failures[0]
    return (run_report_dir(cluster.run_id) / row.report).parent, f"explore run {len(found.rows) + 1}: {combination.key}"


def pointed_at_fix(text: str, subject: Subject) -> str:
    """The reproducer with its sink (or pipeline) replaced by the fixed one."""
    if subject.kind == "sink":
        return re.sub(r"^SINK = .*$", f"SINK = {SETTINGS['sink'].default!r}", text, count=1, flags=re.M)
    return re.sub(r"^PIPELINE = .*$", f"PIPELINE = {FIXED_PIPELINES[subject.name]!r}", text, count=1, flags=re.M)


def pytest_outcome(path: Path) -> str:
    """passed or failed (pytest's own summary word), running the file as a user would."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "chaos", str(path)],
                         capture_output=True, text=True, cwd=path.parent, check=False)
    tail = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-200:]
    return "passed" if run.returncode == 0 else f"failed ({tail})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sinks", default="")
    parser.add_argument("--pipelines", default="")
    parser.add_argument("--records", type=int, default=4_000)
    parser.add_argument("--out", type=Path, default=Path("reproducers"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes = [Outcome(subject) for subject in known_bad(args.sinks, args.pipelines)]
    with session() as opened:
        for outcome in outcomes:
            folder, outcome.found_by = first_failure(opened.cluster, outcome.subject, args.records)
            if folder is None:
                outcome.note = outcome.found_by
                continue
            original = Replay.from_report(folder)
            kinds = anomaly_kinds(json.loads((folder / "result.json").read_text()))
            prefix = outcome.subject.name.removeprefix("bad_").replace("_", "-")[:20]
            outcome.shrunk = shrink(original, kinds, lambda replay, name, prefix=prefix: scenario(
                opened.cluster, f"{prefix}-{name}", **replay.options()).run())  # type: ignore[arg-type, misc]
            if outcome.shrunk.status != "shrunk":
                outcome.note = "flaky: " + "; ".join(f"{w}: {', '.join(o)}" for w, o in outcome.shrunk.tried)
                continue
            name, text = reproducer(outcome.shrunk, folder)
            outcome.reproducer = args.out / name
            outcome.reproducer.write_text(text)
            fixed = args.out / f"{outcome.reproducer.stem}_fixed.py"
            fixed.write_text(pointed_at_fix(text, outcome.subject).replace(
                f"def {outcome.reproducer.stem}(", f"def {outcome.reproducer.stem}_fixed("))
            print(f"{outcome.subject.name}: {original.describe()} -> {outcome.shrunk.smallest.describe()}",  # type: ignore[union-attr]
                  flush=True)
            # each reproducer starts its own cluster, as a user's would (beside this one)
            outcome.as_written, outcome.fixed = pytest_outcome(outcome.reproducer), pytest_outcome(fixed)
            print(f"{outcome.subject.name}: reproducer as written {outcome.as_written}; pointed at the fix "
                  f"{outcome.fixed}", flush=True)
    print(f"\n{len(outcomes)} known-bad sinks and pipelines, {args.records} records to start; "
          f"{(time.monotonic() - started) / 60:.0f} min; reproducers in {args.out}")
    print("| known-bad | found by | before | after | replays | reproducer: as written / at the fix |")
    print("|---|---|---|---|---|---|")
    for outcome in outcomes:
        shrunk = outcome.shrunk
        if shrunk is None or shrunk.smallest is None:
            print(f"| `{outcome.subject.name}` | {outcome.found_by} | - | - | - | {outcome.note} |")
            continue
        replays = sum(len(outcomes) for _, outcomes in shrunk.tried)
        print(f"| `{outcome.subject.name}` | {outcome.found_by} | {shrunk.original.describe()} | "
              f"{shrunk.smallest.describe()} | {replays} | {outcome.as_written.split(' ')[0]} / "
              f"{outcome.fixed.split(' ')[0]} |")
    bad = [o.subject.name for o in outcomes if o.reproducer and not (o.as_written.startswith("failed")
                                                                      and o.fixed == "passed")]
    if bad:
        print(f"reproducers that did not fail as written and pass at the fix: {', '.join(bad)}")


if __name__ == "__main__":
    run_script(main)
