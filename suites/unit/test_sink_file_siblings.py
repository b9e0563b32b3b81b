"""A file sink or pipeline is shipped alone: one that imports a module beside it (a file or a folder) is
refused on the host in one line, exit 2, saying how to ship both (a package, named as a dotted module),
rather than failing in Spark's driver with a traceback. What it imports from elsewhere is its own affair."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.subject.code_spec import locate, resolve_sink

pytestmark = pytest.mark.unit

SINK = "{imports}\n\n\ndef sink(frame, context):\n    return frame\n"


@pytest.mark.parametrize("imports", ["import helpers_eo", "from helpers_eo import write", "import helpers_eo.io",
                                     "def later():\n    import helpers_eo"])
@pytest.mark.parametrize("beside", ["helpers_eo.py", "helpers_eo/__init__.py"], ids=["file", "folder"])
def test_a_file_sink_that_imports_a_module_beside_it_is_refused(tmp_path: Path, imports: str, beside: str) -> None:
    (tmp_path / "jobs").mkdir()
    sink = tmp_path / "jobs" / "orders_sink_eo.py"
    sink.write_text(SINK.format(imports=imports))
    (tmp_path / "jobs" / beside).parent.mkdir(exist_ok=True)
    (tmp_path / "jobs" / beside).write_text("")
    with pytest.raises(BadInput) as refused:
        resolve_sink(f"{sink}:sink")
    message = str(refused.value)
    assert "\n" not in message and refused.value.exit_status == EXIT_BAD_INPUT
    assert "imports helpers_eo" in message and "(add __init__.py)" in message
    assert "--sink jobs.orders_sink_eo:sink" in message and "from jobs import helpers_eo" in message


def test_a_file_pipeline_is_told_the_same(tmp_path: Path) -> None:
    pipeline = tmp_path / "enrich_eo.py"
    pipeline.write_text("import lookups_eo\n\n\ndef transform(frame):\n    return frame\n")
    (tmp_path / "lookups_eo.py").write_text("")
    with pytest.raises(BadInput, match=r"pipeline '.*enrich_eo\.py' imports lookups_eo .*--pipeline "):
        locate(str(pipeline), "pipeline")


def test_imports_from_elsewhere_are_not_refused(tmp_path: Path) -> None:
    sink = tmp_path / "plain_sink_eo.py"
    sink.write_text(SINK.format(imports="import json\nfrom . import nothing_beside\nimport absent_eo"))
    (tmp_path / "data").mkdir()  # a folder beside it that it does not import
    assert resolve_sink(str(sink)).source == sink


def test_the_command_says_it_in_one_line_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "my_sink.py").write_text(SINK.format(imports="import helpers"))
    (tmp_path / "jobs" / "helpers.py").write_text("")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
    ran = subprocess.run([sys.executable, "-m", "harness", "certify", "--sink", "jobs/my_sink.py:sink", "--dry-run"],
                         cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    assert ran.returncode == EXIT_BAD_INPUT and ran.stderr.count("\n") == 1, ran.stderr
    assert ran.stderr.startswith("harness: error: sink 'jobs/my_sink.py:sink' imports helpers"), ran.stderr
