"""The docs cannot drift from the code: the reference pages are generated and checked fresh here, the
benchmarks write their tables into dated pages, and no page tells a user to install what is not published."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import reference_docs

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def test_every_generated_reference_page_is_fresh() -> None:
    for name, text in reference_docs.pages().items():
        page = reference_docs.REFERENCE / name
        assert page.is_file() and page.read_text() == text, \
            f"docs/reference/{name} is stale: run `python -m harness.reference_docs` and commit it"


def test_the_reference_pages_do_not_depend_on_this_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_RECORDS", "7")
    monkeypatch.setenv("HARNESS_BROKERS", "5")
    assert reference_docs.cli_page() == (reference_docs.REFERENCE / "cli.md").read_text()
    assert reference_docs.settings_page() == (reference_docs.REFERENCE / "settings.md").read_text()


def test_the_cli_page_says_what_help_prints_and_what_a_command_needs() -> None:
    """argparse's `%%` escape printed as `%`; a positional that takes none (`merge DIR...`) not required."""
    page = reference_docs.cli_page()
    assert "%%" not in page and "where i % N == K-1" in page
    rows = {row.split(" | ")[0]: row for row in page.splitlines() if row.startswith("| `")}
    assert "required" not in rows["| `merge DIR`"] and "| required |" in rows["| `REGISTRY`"]


def test_the_options_said_to_go_either_side_of_a_command_are_those_the_parser_takes_both_ways() -> None:
    from harness.cli import parser
    from harness.cli.options import GLOBAL
    from harness.settings import SETTINGS

    flags = [SETTINGS[name].flag for name in GLOBAL]
    assert reference_docs.either_side(parser()) == flags
    sentence = reference_docs.cli_page().split("(listed under eo-harness)", 1)[0]
    assert re.findall(r"`(--[\w-]+)`", sentence) == flags
    for args in (["--brokers", "3", "space"], ["space", "--brokers", "3"]):
        assert parser().parse_args(args).brokers == 3


def test_the_settings_page_names_the_commands_that_take_each_setting() -> None:
    """A command's own option of a setting's name (`check --output TOPIC`, `images push REGISTRY`) does not
    take the setting; a setting every command takes says so."""
    rows = {row.split(" | ")[0]: row.split(" | ")[5] for row in reference_docs.settings_page().splitlines()
            if row.startswith("| `")}
    assert rows["| `registry`"] == "every command"
    assert "`check`" not in rows["| `output`"] and "`certify`" in rows["| `output`"]
    assert "`check`" in rows["| `pipeline`"]  # check's --pipeline is the setting, with a help of its own


def test_a_benchmark_table_goes_first_on_its_dated_page(tmp_path: Path, benchmark_script) -> None:  # type: ignore[no-untyped-def]
    docs_page = benchmark_script("docs_page")
    older = docs_page.section("python benchmarks/x.py", ("a", "b"), [(1, 2)], date="2026-11-22", where="old box")
    page = docs_page.record("x", "X", "What x measures.", older, pages=tmp_path)
    newer = docs_page.section("python benchmarks/x.py --quick", ("a", "b"), [(3, 4)], notes="a note")
    docs_page.record("x", "X", "ignored once the page exists", newer, pages=tmp_path)
    text = page.read_text()
    assert text.startswith("# X\n\nWhat x measures.\n")
    assert text.index("| 3 | 4 |") < text.index("## 2026-11-22, old box") < text.index("| 1 | 2 |")
    assert re.search(r"## \d{4}-\d\d-\d\d, \d+ cores", text) and "a note" in text


def test_a_benchmark_names_the_processor_it_ran_on(tmp_path: Path, benchmark_script) -> None:  # type: ignore[no-untyped-def]
    docs_page = benchmark_script("docs_page")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.130\n\n"
                       "processor\t: 1\nmodel name\t: other\ncpu MHz\t\t: 1.0\n")
    assert docs_page.cpu_model(cpuinfo) == "AMD EPYC at 2.6 GHz"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\n")
    assert docs_page.cpu_model(cpuinfo) == "AMD EPYC"
    assert docs_page.cpu_model(tmp_path / "absent") == ""


def test_no_page_installs_a_package_that_is_not_published() -> None:
    texts = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "examples").rglob("*.*")]
    for path in texts:
        if path.is_file():
            assert "pip install eo-harness" not in path.read_text(errors="replace"), path


def test_the_delta_guide_names_the_delta_release_of_each_spark_line() -> None:
    from harness.versions import DELTA_VERSIONS

    guide = " ".join((REPO / "docs" / "guides" / "tables" / "delta.md").read_text().split())
    for line, delta in DELTA_VERSIONS.items():
        assert f"Delta {delta} on Spark {line}" in guide, f"docs/guides/tables/delta.md: Delta {delta} on Spark {line}"


def test_the_sink_guide_names_the_python_packages_of_the_spark_image() -> None:
    from harness.run.driver_supervisor import image_packages

    guide = " ".join((REPO / "docs" / "guides" / "your-sink.md").read_text().split())
    for name in image_packages().split(", "):
        shown = {"psycopg": "psycopg 3", "psycopg2-binary": "psycopg2"}.get(name, name)
        assert shown in guide, f"docs/guides/your-sink.md does not name {shown}, which the Spark image has"


def test_the_contributing_page_names_every_gate_test_and_no_other() -> None:
    """What CI proves is said where contributors read it: each test marked `gate` is named in the
    section by its function (or its file, for a suite gated whole), and every test named there is gated."""
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gate",
                                "-p", "no:cacheprovider", "suites"], cwd=REPO, capture_output=True, text=True)
    gate = [line for line in collected.stdout.splitlines() if "::" in line]
    assert gate, collected.stdout + collected.stderr
    page = (REPO / "docs" / "contributing.md").read_text()
    section = page.split("## What the gate proves", 1)[1].split("\n## ", 1)[0].split("What the gate does not run")[0]
    named = set(re.findall(r"`(test_[\w.]+)", section))
    for node in gate:
        path, test = node.split("::", 1)
        function = test.split("[", 1)[0]
        assert {function, test, Path(path).name} & named, f"{node} is gated but docs/contributing.md does not say so"
    gated_names = {n.split("::", 1)[1].split("[", 1)[0] for n in gate} | {Path(n.split("::")[0]).name for n in gate}
    assert {name.split("[", 1)[0] for name in named} <= gated_names, named - gated_names
