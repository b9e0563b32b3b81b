"""Writes docs/tutorial.md: runs the tutorial's commands in order and puts what they printed on the page.

    python examples/tutorial/generate.py              # Docker and the images: two runs and a quick certification
    python examples/tutorial/generate.py --page-only  # the page with its prose and code, no output: runs nothing

The prose is page.md beside this file; the sinks' code goes on the page from their files, and the fault
from the harness's own fault space, so neither can drift. Each command runs from the checkout with this
checkout's harness; its stdout and stderr are shown as they came, in order, except the harness's
progress lines (`[harness] ...`), which are counted and left out. The page is written only when the
naive sink was caught writing a duplicate, explained with the fault between its copies, and the fixed
sink passed both its run and its quick certification: otherwise the page is left as it was and the exit
status is 1, so that it never shows what did not happen.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PAGE = ROOT / "docs" / "tutorial.md"
TEMPLATE = HERE / "page.md"
GENERATOR = "python examples/tutorial/generate.py"
ROW = "kill-sender-txn.commit"  # the row of the matrix the tutorial runs by hand
RECORDS = 4000
NOT_YET = f"(run {GENERATOR} to fill this in)"
NAIVE_REPORT = "reports/<run>/naive"  # the naive run's report folder, before it ran
PROGRESS = re.compile(r"\[harness[^\]]*\] ")  # harness.progress.say's lines
REPORT = re.compile(r"^report: (.+)/index\.html$", re.MULTILINE)
MARKER = re.compile(r"\{\{(\w+)(?: ([\w.]+))?\}\}")


class NotShown(Exception):
    """A command did not do what the page says it does: the page is not written."""


@dataclass(frozen=True)
class Output:
    command: list[str]  # as the page shows it: `python ...` runs with this interpreter
    text: str  # what it printed, progress lines left out
    status: int | None = None  # its exit status (None: not run)


def step() -> str:
    """The step of the row `ROW`, the fault as `run --fault` takes it, from the harness's fault space."""
    from harness.faults.glossary import every_class

    (found,) = [fault for fault in every_class() if fault.row == ROW]
    return found.faults[0]


def commands(fault: str, naive_report: str = NAIVE_REPORT) -> dict[str, list[str]]:
    """The commands the page shows, by name, in the order they run."""
    def run(sink: str, name: str) -> list[str]:
        return ["python", "-m", "harness", "run", "--sink", f"examples/tutorial/{sink}:sink", "--fault", fault,
                "--records", str(RECORDS), "--name", name]

    return {
        "naive": run("naive_sink.py", "naive"),
        "explanation": ["grep", "-m1", "-o", '"explanation": .*', f"{naive_report}/result.json"],
        "fixed": run("fixed_sink.py", "fixed"),
        "certify": ["python", "-m", "harness", "certify", "--sink", "examples/tutorial/fixed_sink.py:sink", "--quick"],
    }


def shown(lines: list[str]) -> str:
    """What a command printed as the page shows it: its progress lines counted, not shown."""
    kept = [line for line in lines if not PROGRESS.match(line)]
    left_out = len(lines) - len(kept)
    return "\n".join([*([f"({left_out} progress lines left out)"] if left_out else []), *kept]).strip("\n")


def execute(command: list[str]) -> Output:
    """Run a command from the checkout, echoing its output as it comes; stdout and stderr in one stream."""
    argv = [sys.executable, *command[1:]] if command[0] == "python" else command
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}  # this checkout's harness
    print(f"$ {shlex.join(command)}", file=sys.stderr, flush=True)
    lines = []
    with subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace") as process:
        assert process.stdout is not None
        for line in process.stdout:
            sys.stderr.write(line)
            lines.append(line.rstrip("\n"))
    return Output(command, shown(lines), process.returncode)


def report_of(output: Output) -> Path:
    """The report folder a `run` printed."""
    found = REPORT.search(output.text)
    if found is None:
        raise NotShown(f"`{shlex.join(output.command)}` printed no report line (exit status {output.status})")
    return Path(found.group(1))


def result_of(output: Output) -> dict:
    """The scenario's result.json."""
    path = report_of(output) / "result.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise NotShown(f"{path} not read ({error}; exit status {output.status})") from None


def check_naive(output: Output) -> None:
    result = result_of(output)
    anomalies = sorted(result["verdict"]["anomalies"])
    if output.status != 1 or result["outcome"] != "fail" or "duplicate" not in anomalies:
        raise NotShown(f"the naive sink was not caught writing a duplicate: exit status {output.status}, outcome "
                       f"{result['outcome']}, anomalies {', '.join(anomalies) or 'none'}")


def check_explanation(output: Output, fault: str) -> None:
    """The explanation the page reads: two committed copies by one producer id, the fault between them."""
    from harness.faults.spec import parse_step

    pids = re.findall(r"in transaction \(pid (\d+), epoch \d+\)", output.text)
    between = f"between them: {parse_step(fault)} at"
    if (output.status != 0 or len(pids) < 2 or len(set(pids)) != 1
            or output.text.count(", committed at") != len(pids) or between not in output.text):
        raise NotShown(f"the explanation is not the one the page reads (two copies committed by one producer id, "
                       f"'{between}'): {output.text!r} (exit status {output.status})")


def check_fixed(output: Output) -> None:
    outcome = result_of(output)["outcome"]
    if output.status != 0 or outcome != "pass":
        raise NotShown(f"the fixed sink did not pass: exit status {output.status}, outcome {outcome}")


def check_certify(output: Output) -> None:
    row = re.search(rf"^\[\d+/\d+\] {re.escape(ROW)} +PASS ", output.text, re.MULTILINE)
    if output.status != 0 or row is None or "(not a certification)" not in output.text:
        raise NotShown(f"the fixed sink's quick certification did not pass with {ROW} among its rows "
                       f"(exit status {output.status})")


def machine() -> str:
    """The machine in a few words, as the benchmarks' dated pages say it (benchmarks/docs_page.py)."""
    spec = importlib.util.spec_from_file_location("docs_page", ROOT / "benchmarks" / "docs_page.py")
    assert spec and spec.loader
    docs_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs_page)
    return docs_page.machine()


def render(outputs: dict[str, Output], fault: str, generated: str, template: str | None = None) -> str:
    """The page: the template with the sinks' code, the commands and their outputs, and `generated` filled in."""
    def block(output: Output) -> str:
        text = output.text.replace(f"{ROOT}/", "")  # the checkout's folders as the reader's own: relative
        fence = f"```\n$ {shlex.join(output.command)}\n{text}\n```"
        return fence + ("" if output.status is None else f"\n\nExit status {output.status}.")

    def fill(marker: re.Match) -> str:
        kind, name = marker.groups()
        if kind == "code" and name:
            return f"```python\n{(HERE / name).read_text().rstrip()}\n```"
        if kind == "output" and name in outputs:
            return block(outputs[name])
        values = {"generated": generated, "fault": fault, "row": ROW}
        if kind not in values or name:
            raise ValueError(f"{TEMPLATE.name}: unknown marker {marker.group(0)}")
        return values[kind]

    head = (f"<!-- Generated by `{GENERATOR}` from examples/tutorial/page.md and the sinks' files there: "
            "edit those, then run it. -->\n\n")
    return head + MARKER.sub(fill, TEMPLATE.read_text() if template is None else template)


def without_outputs(fault: str) -> str:
    """The page before the commands ran: its prose and code, each command with a note in place of its output."""
    outputs = {name: Output(command, NOT_YET) for name, command in commands(fault).items()}
    return render(outputs, fault, f"The outputs on this page are not generated yet: `{GENERATOR}` runs each command "
                                  "and fills them in.")


def generate() -> str:
    """Run every command in order, each checked before the next; the page with their outputs."""
    fault = step()
    outputs: dict[str, Output] = {}
    outputs["naive"] = execute(commands(fault)["naive"])
    check_naive(outputs["naive"])
    report = report_of(outputs["naive"])
    shown_report = os.path.relpath(report, ROOT) if report.is_relative_to(ROOT) else str(report)
    listed = commands(fault, shown_report)
    outputs["explanation"] = execute(listed["explanation"])
    check_explanation(outputs["explanation"], fault)
    outputs["fixed"] = execute(listed["fixed"])
    check_fixed(outputs["fixed"])
    outputs["certify"] = execute(listed["certify"])
    check_certify(outputs["certify"])
    date = time.strftime("%Y-%m-%d", time.gmtime())
    return render(outputs, fault, f"The outputs on this page are real: `{GENERATOR}` ran each command on {date} "
                                  f"({machine()}), and writes the page only when the naive sink was caught and the "
                                  "fixed one passed. Your times, counts and folders will differ.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page-only", action="store_true", help="write the page without outputs; run nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # this checkout's harness, whatever is installed
    try:
        text = without_outputs(step()) if args.page_only else generate()
    except NotShown as error:
        print(f"{GENERATOR}: {error}; {PAGE.relative_to(ROOT)} left as it was", file=sys.stderr)
        return 1
    PAGE.write_text(text)
    print(f"written: {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
