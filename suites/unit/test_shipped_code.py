"""Users' code that cannot be shipped or read is refused up front, naming the file, with exit 2: over the
relay's limit, a NUL byte, not UTF-8."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.gate.relay_files import MAX_WRITE
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline
from harness.subject.shipment import pack

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
