"""What CI takes: `.ci/run` on a clean clone of the repository's HEAD, timed as a whole, with the figures of
its pytest summary; written on docs/benchmarks/ci.md. Run it alone on the machine: CI's tests are bound by
its cores, and anything beside them slows them.

    python benchmarks/ci.py [--runs 1] [--without-images]

`--without-images` measures what a CI machine without this project's images pays: before each run it removes
every image of this version set from the engine (the run builds them again) and gives the run an empty HOME
(no pip, Maven, Go or harness cache; pyenv's versions stay found through PYENV_ROOT).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docs_page import record, section

from harness.cluster import images
from harness.interrupt import run_script

REPOSITORY = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[0-9.]+)s")
WHAT = ("How long `bash run.sh test` takes: what CI runs (`.ci/run`: ruff, the docs site in strict mode, then "
        "the unit tests and the gate in two pytest-xdist workers), on a clean clone, written by "
        "`benchmarks/ci.py`. What each suite runs: [contributing](../contributing.md#the-suites-and-what-each-takes).")


def without_images(home: Path) -> dict[str, str]:
    """Every image of this version set removed from the engine; the environment of a run with `home` (empty)
    as its HOME."""
    images.remove_all()
    home.mkdir()
    pyenv = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() if shutil.which(
        "pyenv") else ""
    return {"HOME": str(home), **({"PYENV_ROOT": pyenv} if pyenv else {})}


def one_run(commit: str, empty: bool) -> tuple[int, float, str, float]:
    """`.ci/run` on a clean clone of `commit` (`empty`: without images or caches): its exit status, its
    seconds, pytest's counts and seconds."""
    with tempfile.TemporaryDirectory(prefix="eo-ci-") as folder:  # the run's HOME too (`empty`), removed after it
        environment = {**os.environ, "CI": "true", **(without_images(Path(folder) / "home") if empty else {})}
        clone = Path(folder) / "repository"
        subprocess.run(["git", "clone", "-q", str(REPOSITORY), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", commit], check=True)
        log = Path(folder) / "ci.log"
        print(f"`.ci/run` on a clean clone of {commit[:7]} (its log: {log}, kept while it runs) ...", file=sys.stderr)
        started = time.monotonic()
        with log.open("w") as out:
            status = subprocess.run(["bash", ".ci/run"], cwd=clone, stdout=out, stderr=subprocess.STDOUT,
                                    env=environment).returncode
        seconds = time.monotonic() - started
        text = log.read_text(errors="replace")
        found = list(SUMMARY.finditer(text))
        if status != 0:
            print(text[-3000:], file=sys.stderr)
        counts, pytest_s = (found[-1]["counts"], float(found[-1]["seconds"])) if found else ("no summary", 0.0)
        return status, seconds, counts, pytest_s


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60)} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="clean clones run one after another (median quoted)")
    parser.add_argument("--without-images", action="store_true", help="each run without this version set's images "
                        "(removed from the engine first) and with an empty HOME")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs takes 1 or more")
    commit = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    present = not args.without_images and all(images.present(image) for image in images.current().every)
    runs = [one_run(commit, args.without_images) for _ in range(args.runs)]
    rows = [[i + 1, status, counts, minutes(pytest_s), minutes(seconds)]
            for i, (status, seconds, counts, pytest_s) in enumerate(runs)]
    notes = (f"A clean clone of {commit[:7]}, alone on the machine, the images "
             f"{'present' if present else 'built by the run'}"
             f"{' from an empty HOME (no pip, Maven, Go or harness cache)' if args.without_images else ''}; "
             "median of the whole: "
             f"{minutes(statistics.median(r[1] for r in runs))}.")
    for row in rows:
        print(" | ".join(map(str, row)))
    print(notes)
    record("ci", "What CI takes", WHAT, section("CI=true bash .ci/run", ["run", "exit", "pytest", "pytest took",
                                                                       "the whole took"], rows, notes))
    return max(status for status, *_ in runs)


if __name__ == "__main__":
    run_script(main)
