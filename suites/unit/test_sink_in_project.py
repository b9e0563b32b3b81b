"""A sink named as a dotted module of the user's project is found from the project's folder by the console
script (`eo-harness`, whose sys.path starts at its bin folder) as by `python -m harness` (whose sys.path
starts at the current folder), in a flat layout and in a src/ layout, and its top-level package is shipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.subject.code_spec import resolve_sink

pytestmark = pytest.mark.unit

ORDERS = "from {package} import helpers\n\n\ndef sink(frame, context):\n    return helpers.write(frame, context)\n"


def _project(root: Path, package: str, src: bool) -> Path:
    folder = (root / "src" if src else root) / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text("def write(frame, context):\n    return frame\n")
    (folder / "orders.py").write_text(ORDERS.format(package=package))
    return folder


@pytest.mark.parametrize("src", [False, True], ids=["flat", "src-layout"])
def test_the_console_script_finds_a_package_of_the_current_folder(tmp_path: Path, src: bool) -> None:
    project = tmp_path / "project"
    _project(project, "shop_eo", src)
    script = tmp_path / "bin" / "eo-harness"  # a console script: its own folder first on sys.path, not the cwd
    script.parent.mkdir()
    script.write_text("import sys\nfrom harness.cli import main\nsys.exit(main())\n")
    environment = {name: value for name, value in os.environ.items() if not name.startswith("HARNESS_")}
    ran = subprocess.run([sys.executable, str(script), "certify", "--sink", "shop_eo.orders:sink", "--dry-run"],
                         cwd=project, env=environment, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("shop_eo.orders:sink "), ran.stdout[:300]


def test_a_src_layout_package_is_shipped_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = _project(tmp_path, "shop_src_eo", src=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    try:
        sink = resolve_sink("shop_src_eo.orders:sink")
    finally:
        sys.modules.pop("shop_src_eo", None)
    assert sink.package == package and sink.source == package / "orders.py"
    assert sink.shipment is not None and "shop_src_eo/helpers.py" in dict(sink.shipment.files)
