"""The reference sinks' full certifications and the known-bad sinks' quick runs, as a table read from their
own certificates (certificate.json): what each was certified (or caught) under, on which versions.

    python benchmarks/references.py CERTIFICATE_DIR...

Each folder is a `certify --out` folder; the table goes to docs/benchmarks/references.md, dated.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from docs_page import record, section

from harness.interrupt import run_script
from harness.output.registry import store

COLUMNS = ("sink", "output", "versions", "matrix", "brokers", "verdict", "scenarios passed", "caught by",
           "scenarios' time")


def row(folder: Path) -> tuple[object, ...]:
    """One certificate's line."""
    certificate = json.loads((folder / "certificate.json").read_text())
    scenarios = certificate["scenarios"]
    parts = store(certificate["output"]).label
    versions = certificate["versions"]
    stack = f"Spark {versions['spark']}, " + ", ".join(
        f"{key} {value}" for key, value in versions.items() if key in (certificate["output"], "kafka"))
    caught = [f"{s['name']}: " + ", ".join(f"{k}={v}" for k, v in s["anomalies"].items())
              for s in scenarios if s["outcome"] == "fail"]
    seconds = sum(s["seconds"] for s in scenarios)
    where = f", `--store {certificate['store']}`" if "store" in certificate else ""
    return (f"`{certificate['sink']}`", f"{parts} (`{certificate['output']}`{where})", stack, certificate["matrix"],
            certificate["brokers"], certificate["verdict"],
            f"{sum(s['outcome'] == 'pass' for s in scenarios)}/{len(scenarios)}", "; ".join(caught) or "-",
            f"{seconds // 60:.0f} min {seconds % 60:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    args = parser.parse_args()
    rows = [row(folder) for folder in args.folders]
    for line in rows:
        print(" | ".join(map(str, line)))
    command = "python benchmarks/references.py " + " ".join(folder.name for folder in args.folders)
    record("references", "Reference and known-bad sinks, certified", "Table outputs' reference sinks under their "
           "full certification (3 brokers), or a sink under a quick one, read from their own certificates by "
           "`benchmarks/references.py`; the known-bad sinks' first detections are on [Known-bad sinks caught]"
           "(detect.md).", section(command, COLUMNS, rows, args.note))


if __name__ == "__main__":
    run_script(main)
