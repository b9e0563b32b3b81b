"""Certification time for one sink: per-scenario median, where the time goes (each phase's median over
the scenarios that have it) and the whole matrix, from one run.

    python benchmarks/certify.py [--sink transactional] [--pipeline passthrough] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from docs_page import record, section

from harness.certify.certification import certify
from harness.certify.rows import MatrixRun
from harness.interrupt import run_script
from harness.settings import SETTINGS

GOALS = {"scenario_s": 45, "quick_min": 4, "full_min": 15}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sink", default=SETTINGS["sink"].default)
    parser.add_argument("--pipeline", default=SETTINGS["pipeline"].default)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="certify-bench-"))
    started = time.monotonic()
    status = certify(MatrixRun(args.sink, args.pipeline), args.quick, out=out)
    total = time.monotonic() - started
    scenarios = json.loads((out / "certificate.json").read_text())["scenarios"]
    seconds = [s["seconds"] for s in scenarios]
    print(f"sink {args.sink}, pipeline {args.pipeline}, {'quick' if args.quick else 'full'} matrix, "
          f"exit status {status}")
    print(f"scenarios: {len(seconds)}; per scenario median {statistics.median(seconds):.0f} s "
          f"(min {min(seconds):.0f}, max {max(seconds):.0f}; goal <= {GOALS['scenario_s']} s)")
    goal = GOALS["quick_min" if args.quick else "full_min"]
    print(f"whole matrix, cluster start included: {total / 60:.1f} min (goal <= {goal} min)")
    print("phase (seconds)          median     min     max  scenarios")
    names = dict.fromkeys(name for s in scenarios for name in (s.get("phases") or {}))
    for name in names:
        values = [s["phases"][name] for s in scenarios if name in (s.get("phases") or {})]
        print(f"{name:<24} {statistics.median(values):>6.1f} {min(values):>7.1f} {max(values):>7.1f}  {len(values):>9}")
    command = f"python benchmarks/certify.py --sink {args.sink} --pipeline {args.pipeline}{' --quick' * args.quick}"
    record("certify", "Certification time", "How long a certification takes, cluster start included, from "
           "`benchmarks/certify.py` (one run each).", section(command, (
               "matrix", "exit", "scenarios", "median scenario", "whole run"), [(
                   "quick" if args.quick else "full", status, len(seconds), f"{statistics.median(seconds):.0f} s",
                   f"{total / 60:.1f} min")]))


if __name__ == "__main__":
    run_script(main)
