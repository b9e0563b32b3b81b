"""The same scenario on the local engine and on one that is really elsewhere (an isolated engine reached
only over TCP: the harness package copied into a volume, the relay reached over a published port, the
checkpoints read through it), alternating, so that a drifting load weighs on both alike: cluster start
and the scenario's phases, medians per engine.

    python benchmarks/engines.py [--repeats 3] [--records 10000] [--fault kill:driver@txn.pre_commit#2]

Each run is `python -m harness run` in a process of its own (a process talks to one engine). The isolated
engine `bench-far` is started for the benchmark, the images copied in, and removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.cluster import images, isolated_engine
from harness.interrupt import run_script

LOCAL = "unix:///var/run/docker.sock"
PHASES = ("start_to_query", "query_to_first_batch", "first_to_last_batch", "last_batch_to_read")


def one_run(engine: str, records: int, fault: str, reports: Path, name: str,
            tls: dict[str, str] | None = None) -> dict[str, float]:
    """Cluster start, the scenario's phases and the whole command's seconds, from one `harness run` (`tls`: the
    isolated engine's DOCKER_TLS_VERIFY and DOCKER_CERT_PATH)."""
    started = time.monotonic()
    finished = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--sink", "transactional", "--records", str(records),
         "--fault", fault, "--name", name],
        env={**os.environ, **(tls or {}), "DOCKER_HOST": engine, "HARNESS_REPORTS": str(reports)}, capture_output=True,
        text=True)
    total = time.monotonic() - started
    if finished.returncode != 0:
        raise SystemExit(f"{name} on {engine}: exit {finished.returncode}\n{finished.stderr[-2000:]}")
    ready = re.search(r"cluster ready in ([\d.]+) s", finished.stderr)
    (report,) = reports.glob(f"*/{name}")
    result = json.loads((report / "result.json").read_text())
    return {"cluster_start": float(ready.group(1)) if ready else float("nan"),
            **{phase: result["phases"][phase] for phase in PHASES},
            "read_and_check": result["seconds"]["read_and_check"], "command": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--fault", default="kill:driver@txn.pre_commit#2")
    args = parser.parse_args()
    images.build_all()
    environment = isolated_engine.start("bench-far", index=7)
    far = environment["DOCKER_HOST"]
    try:
        print(f"images copied into the isolated engine in {isolated_engine.copy_images('bench-far'):.0f} s", flush=True)
        figures: dict[str, list[dict[str, float]]] = {LOCAL: [], far: []}
        with tempfile.TemporaryDirectory() as reports:
            for n in range(args.repeats):
                for engine in ((LOCAL, far) if n % 2 == 0 else (far, LOCAL)):
                    where = "local" if engine == LOCAL else "isolated"
                    figures[engine].append(one_run(engine, args.records, args.fault, Path(reports), f"{where}-{n}",
                                                   None if engine == LOCAL else environment))
                    print(f"{engine:<32} " + ", ".join(f"{k} {v:.1f}" for k, v in figures[engine][-1].items()),
                          flush=True)
    finally:
        isolated_engine.stop("bench-far")
    print(f"\n{args.records} records, {args.fault}, the reference sink; medians of {args.repeats} (seconds)")
    keys = list(figures[LOCAL][0])
    print(f"{'':<22}" + "".join(f"{engine.split('://')[0] + ' ' + ('local' if engine == LOCAL else 'isolated'):>18}"
                                for engine in figures))
    for key in keys:
        print(f"{key:<22}" + "".join(f"{statistics.median(run[key] for run in runs):>18.1f}"
                                     for runs in figures.values()))


if __name__ == "__main__":
    run_script(main)
