"""False alarms of the reference sink: run its matrix N times, count scenarios that did not pass.

    python benchmarks/flake.py [--runs 10] [--quick]

Every scenario of the reference exactly-once sink must pass; any other verdict is a false alarm
(goal: 0). A full run of 10 matrices takes hours; --quick runs the quick matrix.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from harness.certify import certify
from harness.interrupt import terminate_like_ctrl_c

SINK = "fixtures.sinks.transactional"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    terminate_like_ctrl_c()
    alarms: Counter[str] = Counter()
    scenarios = 0
    for run in range(args.runs):
        out = Path(tempfile.mkdtemp(prefix=f"flake-{run}-"))
        certify(SINK, args.quick, seed=run + 1, records=20_000, out=out)
        for scenario in json.loads((out / "certificate.json").read_text())["scenarios"]:
            scenarios += 1
            if scenario["outcome"] != "pass":
                alarms[f"{scenario['name']}: {scenario['outcome']} {scenario['anomalies']}"] += 1
    print(f"{args.runs} runs of the {'quick' if args.quick else 'full'} matrix of {SINK}: {scenarios} scenarios")
    print(f"false alarms: {sum(alarms.values())} (goal: 0)")
    for alarm, count in alarms.most_common():
        print(f"  {count} x {alarm}")


if __name__ == "__main__":
    main()
