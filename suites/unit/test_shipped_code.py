"""Users' code that cannot be shipped or read is refused up front, naming the file, with exit 2: over the
relay's limit, a NUL byte, not UTF-8. Code is read once: every scenario ships the same bytes, the
certificate hashes them (every file of a package), and a file changed meanwhile is refused, named."""

from __future__ import annotations

import hashlib
import io
import json
import random
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.certify.certification
import harness.certify.rows
import harness.run.session
from harness import versions
from harness.certify.certificate import write_certificate
from harness.cli import main
from harness.errors import EXIT_BAD_INPUT, BadInput, InfrastructureError
from harness.faults.space import Observation
from harness.faults.spec import PLAIN
from harness.gate.relay_files import MAX_WRITE
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline
from harness.subject.shipment import adopt, pack

pytestmark = pytest.mark.unit

SINK = "def sink(frame, context):\n    return frame\n"


def test_the_relay_limit_is_about_768_kib() -> None:
    assert 760 * 1024 < MAX_WRITE < 768 * 1024


def test_a_sink_file_over_the_relay_limit_is_refused_with_its_size_and_the_limit(tmp_path: Path) -> None:
    sink = tmp_path / "oversized_sink_eo.py"
    sink.write_text(SINK + "# " + "x" * MAX_WRITE + "\n")
    with pytest.raises(BadInput) as refused:
        resolve_sink(str(sink))
    message = str(refused.value)
    assert f"{sink.stat().st_size:,} bytes" in message and f"{MAX_WRITE:,} bytes" in message
    assert refused.value.exit_status == EXIT_BAD_INPUT and "\n" not in message


def test_a_package_zipped_over_the_relay_limit_is_refused(tmp_path: Path) -> None:
    package = tmp_path / "bulky_package_eo"
    package.mkdir()
    (package / "__init__.py").write_text(SINK)
    (package / "blob.bin").write_bytes(random.Random(0).randbytes(MAX_WRITE + 1))
    with pytest.raises(BadInput, match=r"bulky_package_eo\.zip is [\d,]+ bytes to ship, over the relay's limit"):
        pack(package, "sink", "bulky_package_eo")


def test_a_package_is_shipped_whole_without_bytecode_and_the_same_files_make_the_same_bytes(tmp_path: Path) -> None:
    package = tmp_path / "small_package_eo"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text(SINK)
    (package / "helpers.py").write_text("X = 1\n")
    (package / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0")
    first = pack(package, "sink", "small_package_eo")
    assert first.name == "small_package_eo.zip"
    assert [name for name, _ in first.files] == ["small_package_eo/__init__.py", "small_package_eo/helpers.py"]
    assert pack(package, "sink", "small_package_eo").sha256 == first.sha256


@pytest.mark.parametrize(("content", "problem"), [
    (SINK.encode() + b"\0\n", "NUL byte"),
    (SINK.encode() + b"# caf\xe9\n", "not UTF-8"),
])
def test_a_sink_that_is_not_text_is_bad_input_naming_the_file(tmp_path: Path, content: bytes, problem: str) -> None:
    sink = tmp_path / "binary_sink_eo.py"
    sink.write_bytes(content)
    with pytest.raises(BadInput, match=problem) as refused:
        resolve_sink(f"{sink}:sink")
    assert str(sink) in str(refused.value) and refused.value.exit_status == EXIT_BAD_INPUT


@pytest.mark.parametrize(("content", "problem"), [
    (b"def transform(source):\n    return source\n\0", "NUL byte"),
    (b"def transform(source):\n    return '\xff'\n", "not UTF-8"),
])
def test_a_pipeline_file_that_is_not_text_is_bad_input_naming_the_file(tmp_path: Path, content: bytes,
                                                                      problem: str) -> None:
    pipeline = tmp_path / "binary_pipeline_eo.py"
    pipeline.write_bytes(content)
    with pytest.raises(BadInput, match=problem) as refused:
        load_pipeline(str(pipeline))
    assert str(pipeline) in str(refused.value)


def test_code_is_read_once_and_every_scenario_ships_those_bytes(tmp_path: Path) -> None:
    sink = tmp_path / "read_once_sink_eo.py"
    sink.write_text(SINK)
    first, second = resolve_sink(str(sink)), resolve_sink(str(sink))
    assert first.shipment is second.shipment and first.shipment is not None
    assert first.shipment.data == SINK.encode()
    assert first.source_sha256 == first.shipment.sha256 == hashlib.sha256(SINK.encode()).hexdigest()


def test_a_file_edited_after_it_was_first_read_is_refused_naming_it(tmp_path: Path) -> None:
    sink = tmp_path / "edited_sink_eo.py"
    sink.write_text(SINK)
    resolve_sink(str(sink))
    sink.write_text(SINK + "# a change\n")
    with pytest.raises(BadInput, match="was edited after it was first read") as refused:
        resolve_sink(str(sink))
    assert str(sink) in str(refused.value) and refused.value.exit_status == EXIT_BAD_INPUT


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's package on sys.path, its sink in a module of its own (imported anew by each test)."""
    root = tmp_path / "acme_shipped_eo"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "sink.py").write_text("from acme_shipped_eo.helpers import X\n" + SINK)
    (root / "helpers.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] == root.name]:
        del sys.modules[name]


def test_every_file_of_a_package_is_hashed_as_shipped(package: Path) -> None:
    code = resolve_sink("acme_shipped_eo.sink:sink")
    assert code.shipment is not None
    shipped = zipfile.ZipFile(io.BytesIO(code.shipment.data))
    files = code.shipment.to_dict()["files"]
    assert sorted(files) == sorted(shipped.namelist()) == ["acme_shipped_eo/__init__.py",
                                                            "acme_shipped_eo/helpers.py", "acme_shipped_eo/sink.py"]
    assert all(hashlib.sha256(shipped.read(name)).hexdigest() == sha for name, sha in files.items())
    assert code.source_sha256 == files["acme_shipped_eo/sink.py"]


@pytest.mark.parametrize("change, named, how", [
    (lambda root: (root / "helpers.py").write_text("X = 2\n"), "helpers.py", "edited"),
    (lambda root: (root / "extra.py").write_text(""), "extra.py", "added"),
    (lambda root: (root / "helpers.py").unlink(), "helpers.py", "removed"),
])
def test_any_file_of_a_package_changed_after_it_was_read_is_refused_naming_it(package: Path, change, named: str,
                                                                              how: str) -> None:
    resolve_sink("acme_shipped_eo.sink:sink")
    change(package)
    with pytest.raises(BadInput, match=f"was {how} after") as refused:
        resolve_sink("acme_shipped_eo.sink:sink")
    assert str(package / named) in str(refused.value)


def test_a_worker_ships_its_parents_bytes_and_refuses_a_file_changed_since(tmp_path: Path) -> None:
    sink = tmp_path / "worker_sink_eo.py"
    sink.write_text(SINK)
    parents = pack(sink, "sink", str(sink))  # as the parent read it, handed to a worker process
    sink.write_text(SINK + "# edited before the worker started\n")
    adopt((parents,))
    with pytest.raises(BadInput, match="was edited after it was first read"):
        resolve_sink(str(sink))
    sink.write_text(SINK)
    assert resolve_sink(str(sink)).shipment is parents


def test_a_sink_edited_during_a_certification_fails_it_with_exit_2_and_no_certificate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline's row edits the file (as a user saving it meanwhile would); the next row is refused."""
    sink = tmp_path / "certified_sink_eo.py"
    sink.write_text(SINK)
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    stand = SimpleNamespace(run_id="run", folder=tmp_path / "reports" / "run",
                            images=SimpleNamespace(stack=versions.stack()))
    stand.cluster = stand

    @contextmanager
    def session(run_id: str | None = None, **_: object) -> Iterator[SimpleNamespace]:
        yield stand

    class EditingScenario:
        def __init__(self, *args: object) -> None:
            sink.write_text(SINK + "# saved while the matrix ran\n")

        def run(self) -> None:
            raise InfrastructureError("no cluster in a unit test")

    monkeypatch.setattr(harness.certify.rows, "session", session)
    monkeypatch.setattr(harness.run.session, "Scenario", EditingScenario)
    out = tmp_path / "certificate"
    assert main(["certify", "--sink", str(sink), "--workers", "1", "--out", str(out)]) == EXIT_BAD_INPUT  # in-process
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("harness: ")]
    assert len(error) == 1 and str(sink) in error[0] and "was edited after" in error[0], error
    assert not (out / "certificate.json").exists()


def test_the_certificate_names_the_bytes_shipped(tmp_path: Path) -> None:
    sink = tmp_path / "attested_sink_eo.py"
    sink.write_text(SINK)
    write_certificate(tmp_path / "certificate", resolve_sink(str(sink)), load_pipeline("passthrough"),
                      Observation.assumed(PLAIN, stateful=False), True, 1, [], 0)
    written = json.loads((tmp_path / "certificate" / "certificate.json").read_text())
    digest = hashlib.sha256(SINK.encode()).hexdigest()
    assert written["shipped"] == {"sink": {"name": sink.name, "sha256": digest, "files": {sink.name: digest}}}
    assert written["sink_source_sha256"] == digest
    assert digest in (tmp_path / "certificate" / "index.html").read_text()
