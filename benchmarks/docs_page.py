"""A benchmark's table written into the docs site (docs/benchmarks/<name>.md), dated and with the machine it
ran on, newest first, so that figures are never copied by hand. The benchmark scripts call `record`."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
MARK = "<!-- measurements: newest first -->"


def machine() -> str:
    """The machine in a few words: cores and their model, memory, operating system, Python. The model
    because two hosts of the same size can differ by a third in a row's time."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):
        memory = ""
    model = cpu_model()
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} cores{f' ({model})' if model else ''}{memory}, {system}, " \
           f"Python {platform.python_version()}"


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first processor's model name and clock, as Linux gives them (a virtual machine may give only the
    maker's family); empty where there is none."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        return ""
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model, mhz = fields.get("model name", ""), fields.get("cpu MHz", "")
    return f"{model} at {float(mhz) / 1000:.1f} GHz" if model and mhz else model


def section(command: str, columns: Sequence[str], rows: Sequence[Sequence[object]], notes: str = "",
            date: str | None = None, where: str | None = None) -> str:
    """One measurement: a heading with its date and machine, the command, the table, notes."""
    cells = [f"| {' | '.join(columns)} |", f"|{'---|' * len(columns)}"]
    cells += [f"| {' | '.join(str(c).replace('|', '/') for c in row)} |" for row in rows]
    text = [f"## {date or time.strftime('%Y-%m-%d', time.gmtime())}, {where or machine()}", "",
            f"`{command}`", "", *cells]
    return "\n".join([*text, *(["", notes] if notes else [])]) + "\n"


def record(name: str, title: str, what: str, measurement: str, pages: Path = PAGES) -> Path:
    """Put `measurement` (a `section`) first on page `name`, made with `title` and `what` when new."""
    page = pages / f"{name}.md"
    head, older = f"# {title}\n\n{what}\n\n{MARK}\n", ""
    if page.is_file():
        head, _, older = page.read_text().partition(MARK + "\n")
        head += MARK + "\n"
    page.parent.mkdir(parents=True, exist_ok=True)
    older = older.lstrip("\n")
    page.write_text(f"{head}\n{measurement}" + (f"\n{older}" if older else ""))
    print(f"table written to {page}", file=sys.stderr)
    return page
