"""False alarms of the reference sink: run its matrix N times, count scenarios that did not pass.

    python benchmarks/flake.py [--runs 10] [--first-seed 1] [--quick] [--pipeline fraud_windows]
                               [--sink transactional]

Every scenario of the reference exactly-once sink must pass; any other verdict is a false alarm
(goal: 0). A full run of 10 matrices takes hours; --quick runs the quick matrix, and --first-seed
lets the runs be split across sittings (seeds first-seed .. first-seed+runs-1) and added up.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from docs_page import record, section

from harness.certify.certification import certify
from harness.certify.rows import MatrixRun
from harness.interrupt import run_script
from harness.settings import SETTINGS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--pipeline", default=SETTINGS["pipeline"].default)
    parser.add_argument("--sink", default=SETTINGS["sink"].default, help="a sink that must pass every scenario")
    args = parser.parse_args()
    alarms: Counter[str] = Counter()
    scenarios = 0
    seeds = range(args.first_seed, args.first_seed + args.runs)
    for seed in seeds:
        out = Path(tempfile.mkdtemp(prefix=f"flake-{seed}-"))
        certify(MatrixRun(args.sink, args.pipeline, seed=seed), args.quick, out=out)
        run_alarms = 0
        for scenario in json.loads((out / "certificate.json").read_text())["scenarios"]:
            scenarios += 1
            if scenario["outcome"] != "pass":
                run_alarms += 1
                alarms[f"{scenario['name']}: {scenario['outcome']} {scenario['anomalies']}"] += 1
        print(f"[flake] seed {seed}: {run_alarms} false alarms; certificate in {out}", flush=True)
    print(f"{args.runs} runs (seeds {seeds.start}..{seeds.stop - 1}) of the {'quick' if args.quick else 'full'} "
          f"matrix of {args.sink} with {args.pipeline}: {scenarios} scenarios")
    print(f"false alarms: {sum(alarms.values())} (goal: 0)")
    for alarm, count in alarms.most_common():
        print(f"  {count} x {alarm}")
    matrix = "quick" if args.quick else "full"
    command = (f"python benchmarks/flake.py --runs {args.runs} --first-seed {args.first_seed} --sink {args.sink} "
               f"--pipeline {args.pipeline}{' --quick' * args.quick}")
    record("flake", "False alarms", "Full matrices of the reference sink (or a stateful pipeline) run again and again "
           "with other seeds (`benchmarks/flake.py`): a pass expected every time.", section(command, (
               "matrix", "runs (seeds)", "scenarios", "false alarms"), [(
                   matrix, f"{args.runs} ({seeds.start}..{seeds.stop - 1})", scenarios, sum(alarms.values()))],
               "; ".join(f"{count} x {alarm}" for alarm, count in alarms.most_common())))


if __name__ == "__main__":
    run_script(main)
