"""Bad input is one clear line and exit status 2, before anything starts; the matrix is well formed."""

import importlib.util
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness.certify.matrix import MATRIX, scenarios_for
from harness.client.workload import InputRecord, Workload
from harness.errors import BadInput
from harness.faults.spec import PLAIN, TRANSACTIONAL, kind_from_points, parse_step
from harness.run.shipping import ship
from harness.subject.code_spec import catalog, resolve_sink
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]


def harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=60)


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--fault", "kill:toaster@produce"], "unknown target 'toaster'"),
        (["run", "--sink", "nope"], "sink 'nope' cannot be imported (no such module; the catalog's sinks: bad_"),
        (["run", "--sink", "my.sinks.nope"], "sink 'my.sinks.nope' cannot be imported"),
        (["run", "--pipeline", "nope"], "pipeline 'nope' cannot be imported"),
        (["certify", "--sink", "/no/such/sink.py:sink"], "no such file"),
        (["smoke", "--pipeline", "nope"], "pipeline 'nope' cannot be imported"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args: list[str], message: str) -> None:
    run = harness(*args)
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("harness: error:")]
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_sink_files_must_define_the_sink(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def sink(frame, context)\n    return frame\n")
    with pytest.raises(BadInput, match="does not parse"):
        resolve_sink(f"{broken}:sink")
    other = tmp_path / "other.py"
    other.write_text("def writer(frame, context):\n    return frame.writeStream\n")
    with pytest.raises(BadInput, match="defines no 'sink'"):
        resolve_sink(f"{other}:sink")
    resolved = resolve_sink(f"{other}:writer")
    assert (resolved.module, resolved.attribute, resolved.shipped) == ("other", "writer", True)


@pytest.mark.parametrize(
    "source, message",
    [
        ("import nowhere_to_be_found\ndef transform(s):\n    return s\n", "cannot be imported: ModuleNotFoundError"),
        pytest.param("from pyspark.sql import functions\ndef transform(s):\n    return s\n",
                     "import pyspark inside transform", marks=pytest.mark.skipif(
                         importlib.util.find_spec("pyspark") is not None, reason="pyspark is on this host")),
        ("def workload(seed, n):\n    return []\n", "has no transform"),
        ("def transform(s):\n    return s\ndef model(inputs):\n    return {}\n", "give both model"),
        ("def transform(s):\n    return s\ndef workload(seed, n):\n    yield 'k', 'text, not bytes', 0\n",
         "workload record 0 is ('k', 'text, not bytes', 0), not a (key"),
        ("def transform(s):\n    return s\ndef workload(seed, n):\n    yield b'value only'\n", "workload record 0"),
        ("def transform(s):\n    return s\ndef workload(seed, n):\n    raise OSError('no input')\n", "raised OSError"),
        ("def transform(s):\n    return s\nOUTPUT_MODE = 'upsert'\n", "OUTPUT_MODE 'upsert'"),
    ],
)
def test_pipeline_files_are_checked_when_they_load(tmp_path: Path, source: str, message: str) -> None:
    path = tmp_path / "my_pipeline.py"
    path.write_text(source)
    with pytest.raises(BadInput, match=re.escape(message)):
        load_pipeline(str(path))


@pytest.mark.parametrize("name", ["json.py", "harness.py", "sys.py"])
def test_a_file_named_like_a_module_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("def transform(s):\n    return s\ndef sink(frame, context):\n    return frame\n")
    with pytest.raises(BadInput, match="rename the file"):
        load_pipeline(str(path))
    with pytest.raises(BadInput, match="rename the file"):
        resolve_sink(f"{path}:sink")


def test_a_pipeline_file_with_only_transform_and_workload_is_differential_and_shipped(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text("def transform(s):\n    return s\ndef workload(seed, n):\n"
                    "    for i in range(n):\n        yield (None if i % 2 else str(i)), b'%d' % (seed * i), i\n")
    pipeline = load_pipeline(str(path))
    assert (pipeline.oracle, pipeline.code.module, pipeline.code.shipped) == ("differential", "mine", True)
    records = list(pipeline.inputs(Workload(4, seed=3)))
    assert records == [InputRecord("3-000000000", b"0", b"0", 0), InputRecord("3-000000001", None, b"3", 1),
                       InputRecord("3-000000002", b"2", b"6", 2), InputRecord("3-000000003", None, b"9", 3)]
    assert load_pipeline("harness.catalog.pipelines.passthrough").oracle == "model"


def test_catalog_sinks_resolve_by_short_or_dotted_name_without_pyspark_on_the_host() -> None:
    for name in ("transactional", "driver_transactional", "builtin_kafka", "bad_no_marker_check"):
        for spec in (resolve_sink(name), resolve_sink(f"harness.catalog.sinks.{name}")):
            assert spec.argument == f"harness.catalog.sinks.{name}:sink" and not spec.shipped
            assert len(spec.source_sha256) == 64
    assert {"transactional", "builtin_kafka"} <= set(catalog("sink"))
    assert {"passthrough", "fraud_windows", "running_totals", "dedup"} <= set(catalog("pipeline"))
    assert "records" not in catalog("pipeline")  # a helper module, not a pipeline


def test_a_users_dotted_module_ships_its_whole_top_level_package(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "acme_streaming"
    (package / "sinks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sinks" / "__init__.py").write_text("")
    (package / "common.py").write_text("SERVERS = 'x'\n")
    (package / "sinks" / "upsert.py").write_text("from acme_streaming.common import SERVERS\n\n"
                                                 "def sink(frame, context):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = resolve_sink("acme_streaming.sinks.upsert")
    assert (spec.shipped, spec.package, spec.argument) == (True, package, "acme_streaming.sinks.upsert:sink")
    written: dict[str, bytes] = {}

    class Volume:  # what the relay is sent
        def write(self, path: str, data: bytes) -> None:
            written[path] = data

    shipped = ship(spec, Volume(), "/checkpoints/s1")  # type: ignore[arg-type]
    assert shipped == "/checkpoints/s1-code/acme_streaming.zip" and list(written) == [shipped]
    names = zipfile.ZipFile(io.BytesIO(written[shipped])).namelist()
    assert {"acme_streaming/common.py", "acme_streaming/sinks/upsert.py"} <= set(names)


def test_matrix_rows_parse_and_apply_by_kind() -> None:
    names = [row.name for row in MATRIX]
    assert len(names) == len(set(names))
    for row in MATRIX:
        for fault in row.faults:
            parse_step(fault)
    assert scenarios_for(TRANSACTIONAL, quick=False)[0].name == "baseline"
    assert all("produce" not in f for row in scenarios_for(TRANSACTIONAL, False) for f in row.faults)
    assert all("txn." not in f for row in scenarios_for(PLAIN, False) for f in row.faults)
    assert not any("state." in f for row in scenarios_for(TRANSACTIONAL, False) for f in row.faults)
    stateful = scenarios_for(PLAIN, False, stateful=True)
    assert {row.state_store for row in stateful if row.stateful} == {"hdfs", "rocksdb", "rocksdb-changelog"}
    assert {row.state_store for row in scenarios_for(PLAIN, True, stateful=True) if row.stateful} == {
        "hdfs", "rocksdb-changelog"}
    assert kind_from_points({"txn.init", "produce"}) == TRANSACTIONAL
    assert kind_from_points({"produce"}) == PLAIN
