"""Where a whole certification's time goes: each row's seconds split by phase, the phases summed over the
rows, and the rows that dominate. It runs `certify` for any sink, output and store (full or `--quick`),
alone on the machine, or reads a certificate already written (`--certificate`).

    python benchmarks/matrix_costs.py --sink transactional [--output kafka] [--store s3] [--quick]
                                      [--brokers 3] [--reports DIR] [--record]
    python benchmarks/matrix_costs.py --certificate reports/<run>/certificate.json

A row's phases are its scenario's own (certificate.json's `phases`), one after another: the start until the
query runs, the wait for its first batch, the batches from the first to the last (the faults, their holds and
the recoveries among them; the first batch's and the recovery's own seconds are shown beside), the read and
check, and the rest of the row (its topics, its input, the cluster's work between rows). When it runs certify
it also reads how long this machine's cores were busy over the command (benchmarks/machine_cpu.py): work
the rows did whatever the schedule, and the shortest time it fits in on this machine. `--record` puts the
table first on docs/benchmarks/matrix_costs.md, dated.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docs_page import record, section
from machine_cpu import busy_seconds, floor

from harness.interrupt import run_script

# (name, how it is read from a row's phases): start, wait, batches and read are parts of the row, one after
# another; the first batch and the recovery are parts of the batches
PHASES = (("start", lambda p: p.get("start_to_query", 0.0)),
          ("wait", lambda p: p.get("query_to_first_batch", 0.0)),
          ("batches", lambda p: p.get("first_to_last_batch", 0.0)),
          ("first batch", lambda p: p.get("first_batch", 0.0)),
          ("recovery", lambda p: p.get("fault_to_recovery") or 0.0),
          ("read", lambda p: p.get("last_batch_to_read", 0.0)))
IN_TURN = ("start", "wait", "batches", "read")
TOP = 5


def certify(args: argparse.Namespace, reports: Path) -> tuple[Path, float, float | None, int]:
    """Run certify as a user would; its certificate, its seconds, the CPU seconds this machine was busy
    meanwhile (None where the kernel gives no count) and its exit status."""
    command = [sys.executable, "-m", "harness", "certify", "--sink", args.sink, "--output", args.output,
               "--reports", str(reports), *(["--store", args.store] if args.store else []),
               *(["--quick"] if args.quick else []), *(["--brokers", str(args.brokers)] if args.brokers else [])]
    print(" ".join(command[1:]), file=sys.stderr)
    earlier = set(reports.rglob("certificate.json"))  # a kept folder's earlier runs are not this one
    started, busy_before = time.monotonic(), busy_seconds()
    status = subprocess.run(command).returncode
    seconds, busy_after = time.monotonic() - started, busy_seconds()
    busy = None if busy_before is None or busy_after is None else busy_after - busy_before
    found = sorted(set(reports.rglob("certificate.json")) - earlier)
    if not found:
        raise SystemExit(f"certify exited {status} and wrote no new certificate under {reports}")
    return found[-1], seconds, busy, status


def rows_of(certificate: dict) -> list[list[object]]:
    """A line per row: its name, seconds, how many rows ran beside it, each phase, the rest."""
    lines = []
    for row in sorted(certificate["scenarios"], key=lambda s: -s["seconds"]):
        phases = row.get("phases") or {}
        parts = [read(phases) for _, read in PHASES]
        rest = row["seconds"] - sum(part for (name, _), part in zip(PHASES, parts, strict=True) if name in IN_TURN)
        lines.append([row["name"], f"{row['seconds']:.1f}", len(row.get("beside") or []),
                      *(f"{part:.1f}" for part in parts), f"{rest:.1f}"])
    return lines


def summary(certificate: dict, wall: float | None, busy: float | None = None) -> str:
    """The phases summed over the rows, the rows that dominate, and the machine's busy CPU time when known."""
    rows = certificate["scenarios"]
    total = sum(r["seconds"] for r in rows)
    sums = {name: sum(read(r.get("phases") or {}) for r in rows) for name, read in PHASES}
    top = sorted(rows, key=lambda r: -r["seconds"])[:TOP]
    said = [f"{len(rows)} rows, {total:.0f} s of rows in all"
            + (f", the command {wall:.0f} s" if wall is not None else "")
            + (f" ({floor(busy)})" if busy is not None else "") + "."]
    share = {name: f"{name} {seconds:.0f} s ({seconds / total:.0%})" for name, seconds in sums.items()}
    within = [share[name] for name in sums if name not in IN_TURN]
    said.append("Summed over the rows: " + ", ".join(share[name] for name in IN_TURN)
                + f"; within the batches, {' and '.join(within)}.")
    said.append(f"The {len(top)} longest rows are {sum(r['seconds'] for r in top) / total:.0%} of the rows' time: "
                + ", ".join(f"{r['name']} {r['seconds']:.0f} s" for r in top) + ".")
    return " ".join(said)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--certificate", type=Path, help="a certificate.json to read, rather than run certify")
    parser.add_argument("--sink", default="transactional")
    parser.add_argument("--output", default="kafka")
    parser.add_argument("--store", default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--brokers", type=int, default=None)
    parser.add_argument("--record", action="store_true", help="put the table first on its benchmark page")
    parser.add_argument("--reports", type=Path, default=None,
                        help="keep certify's reports here (every row's logs), rather than in a folder removed after")
    args = parser.parse_args()
    status, wall, busy = 0, None, None
    with tempfile.TemporaryDirectory(prefix="eo-matrix-") as folder:
        path = args.certificate
        if path is None:
            path, wall, busy, status = certify(args, args.reports or Path(folder))
        if not path.is_file():
            parser.error(f"--certificate {path}: no such file")
        certificate = json.loads(path.read_text())
    columns = ["row", "seconds", "beside", *(name for name, _ in PHASES), "rest"]
    rows = rows_of(certificate)
    print(" | ".join(columns))
    for row in rows:
        print(" | ".join(map(str, row)))
    notes = summary(certificate, wall, busy)
    print(notes)
    if args.record:
        store = f" on {certificate['store']}" if "store" in certificate else ""
        what = f"{certificate['sink']} on {certificate['output']}{store}, the {certificate['matrix']} matrix"
        command = " ".join(["python benchmarks/matrix_costs.py", *(a for a in sys.argv[1:] if a != "--record")])
        record("matrix_costs", "Where a certification's time goes",
               "Each row of a certification, its seconds split by phase (`benchmarks/matrix_costs.py`).",
               section(command, columns, rows, f"{what}: {notes}"))
    return status


if __name__ == "__main__":
    run_script(main)
