"""The tutorial (docs/tutorial.md) shows what its files are: its sinks' code as they are, the commands its
generator runs, and outputs only from those commands. What its sinks do with a batch run twice is checked
here against a Kafka in memory; what they do under a real fault, only the generator shows."""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from harness.subject.code_spec import resolve_sink

pytestmark = pytest.mark.unit
REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "examples" / "tutorial"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tutorial_{name}", TUTORIAL / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


generate = load("generate")


class Kafka:
    """Committed records by topic and partition; a producer's records become visible at its commit."""

    def __init__(self) -> None:
        self.committed: dict[tuple[str, int], list[tuple[bytes, bytes]]] = {}

    def records(self, topic: str) -> list[tuple[bytes, bytes]]:
        return [record for (name, _), records in sorted(self.committed.items()) if name == topic for record in records]


class Producer:
    kafka: Kafka

    def __init__(self, config: dict) -> None:
        assert config["transactional.id"]
        self.open: list[tuple[str, int, bytes, bytes]] | None = None

    def init_transactions(self, timeout: float) -> None:
        pass

    def begin_transaction(self) -> None:
        self.open = []

    def produce(self, topic: str, value: bytes, key: bytes, partition: int = 0) -> None:
        assert self.open is not None, "a write outside a transaction"
        self.open.append((topic, partition, key, value))

    def commit_transaction(self, timeout: float) -> None:
        assert self.open is not None
        for topic, partition, key, value in self.open:
            self.kafka.committed.setdefault((topic, partition), []).append((key, value))
        self.open = None


class Message:
    def __init__(self, value: bytes | None = None) -> None:
        self._value = value

    def value(self) -> bytes | None:
        return self._value

    def error(self) -> SimpleNamespace | None:
        return None if self._value is not None else SimpleNamespace(code=lambda: KafkaError._PARTITION_EOF)


class Consumer:
    kafka: Kafka

    def __init__(self, config: dict) -> None:
        assert config["isolation.level"] == "read_committed"
        self.messages: list[Message] = []

    def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:  # type: ignore[no-untyped-def]
        return 0, len(self.kafka.committed.get((tp.topic, tp.partition), []))

    def assign(self, partitions: list) -> None:
        (tp,) = partitions
        self.messages = [Message(value) for _, value in self.kafka.committed.get((tp.topic, tp.partition), [])]
        self.messages.append(Message())  # the end of the partition

    def poll(self, timeout: float) -> Message:
        return self.messages.pop(0)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("sink, copies", [("naive_sink", 2), ("fixed_sink", 1)])
def test_a_batch_run_again_by_a_restarted_driver(sink: str, copies: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The naive sink writes it twice; the fixed one finds its marker and writes it once."""
    module, kafka = load(sink), Kafka()
    monkeypatch.setattr(Producer, "kafka", kafka, raising=False)
    monkeypatch.setattr(Consumer, "kafka", kafka, raising=False)
    monkeypatch.setattr(module, "Producer", Producer)
    monkeypatch.setattr(module, "Consumer", Consumer, raising=False)
    context = SimpleNamespace(bootstrap="gate:9092", topic="out", sink_id="s1", marker_topic="markers")
    frame = SimpleNamespace(writeStream=SimpleNamespace(foreachBatch=lambda writer: writer))
    rows = [{"key": bytearray(b"k1"), "value": "v1"}, {"key": "k2", "value": bytearray(b"v2")}]
    batch = SimpleNamespace(select=lambda *columns: SimpleNamespace(collect=lambda: rows))
    first = module.sink(frame, context)
    first(batch, 0)
    module.sink(frame, context)(batch, 0)  # the new driver's writer: Spark runs batch 0 again
    first(batch, 1)
    once = [(b"k1", b"v1"), (b"k2", b"v2")]
    assert kafka.records("out") == once * copies + once


def test_the_sinks_are_sinks_the_harness_takes() -> None:
    for name in ("naive_sink.py", "fixed_sink.py"):
        resolved = resolve_sink(f"{TUTORIAL / name}:sink")
        assert resolved.attribute == "sink" and resolved.output is None  # the Kafka output


def test_the_fault_is_the_rows_step_and_the_commands_run_it() -> None:
    fault = generate.step()
    assert fault == "kill:sender@txn.commit#1"
    listed = generate.commands(fault)
    assert list(listed) == ["naive", "explanation", "fixed", "certify"]
    assert listed["naive"][:6] == ["python", "-m", "harness", "run", "--sink", "examples/tutorial/naive_sink.py:sink"]
    assert listed["fixed"][5] == "examples/tutorial/fixed_sink.py:sink"
    for name in ("naive", "fixed"):
        assert listed[name][listed[name].index("--fault") + 1] == fault
    assert listed["certify"] == ["python", "-m", "harness", "certify", "--sink",
                                 "examples/tutorial/fixed_sink.py:sink", "--quick"]


def test_the_page_shows_each_command_its_output_and_the_sinks_as_they_are() -> None:
    fault = generate.step()
    listed = generate.commands(fault, "reports/r1/naive")
    outputs = {name: generate.Output(command, f"output of {name}", 1 if name == "naive" else 0)
               for name, command in listed.items()}
    page = generate.render(outputs, fault, "Generated on 2026-11-27.")
    assert page.count("```\n$ python -m harness run --sink examples/tutorial/naive_sink.py:sink --fault "
                      f"'{fault}' --records 4000 --name naive\noutput of naive\n```\n\nExit status 1.") == 1
    assert "$ grep -m1 -o '\"explanation\": .*' reports/r1/naive/result.json\noutput of explanation\n```" in page
    assert "$ python -m harness certify --sink examples/tutorial/fixed_sink.py:sink --quick\noutput of certify" in page
    order = [page.index(f"output of {name}") for name in listed]
    assert order == sorted(order)
    for name in ("naive_sink.py", "fixed_sink.py"):
        assert f"```python\n{(TUTORIAL / name).read_text().rstrip()}\n```" in page
    assert "Generated on 2026-11-27." in page and "{{" not in page and generate.NOT_YET not in page
    with pytest.raises(ValueError, match="unknown marker"):
        generate.render(outputs, fault, "", template="{{output nope}}")


def test_the_committed_page_is_the_generators_with_the_sinks_as_they_are() -> None:
    """Either as `--page-only` writes it, or with outputs: then every command was run and shown."""
    page = (REPO / "docs" / "tutorial.md").read_text()
    fault = generate.step()
    if generate.NOT_YET in page:
        assert page == generate.without_outputs(fault)
        return
    for command in generate.commands(fault, "REPORT").values():
        shown = shlex.join(command).split("REPORT")[0]
        assert f"```\n$ {shown}" in page, f"docs/tutorial.md does not show `{shown}`: run {generate.GENERATOR}"
    for name in ("naive_sink.py", "fixed_sink.py"):
        assert f"```python\n{(TUTORIAL / name).read_text().rstrip()}\n```" in page, \
            f"docs/tutorial.md shows another {name}: run {generate.GENERATOR}"
    assert "ran each command on" in page


def test_the_tutorial_comes_right_after_what_it_needs_first() -> None:
    """A newcomer sets the harness up (getting started, requirements) before the tutorial runs it."""
    nav = (REPO / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert nav.startswith("  - Home: index.md\n  - Getting started: getting-started.md\n"
                          "  - Requirements: requirements.md\n  - Tutorial: tutorial.md\n")


def test_progress_lines_are_counted_not_shown() -> None:
    lines = ["[harness] starting the cluster ...", "[harness w1] naive: consumed 10/40", "scenario  outcome",
             "naive     fail", "[harness] done"]
    assert generate.shown(lines) == "(3 progress lines left out)\nscenario  outcome\nnaive     fail"
    assert generate.shown(["harness: error: bad input"]) == "harness: error: bad input"


def write_result(folder: Path, outcome: str, anomalies: dict) -> generate.Output:
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps({"outcome": outcome, "verdict": {"anomalies": anomalies}}))
    return generate.Output(["python"], f"scenario  outcome\nreport: {folder}/index.html", 1 if outcome == "fail" else 0)


def test_the_page_is_not_written_when_a_command_did_not_do_what_it_says(tmp_path: Path) -> None:
    generate.check_naive(write_result(tmp_path / "caught", "fail", {"duplicate": {"count": 3}}))
    with pytest.raises(generate.NotShown, match="not caught writing a duplicate"):
        generate.check_naive(write_result(tmp_path / "passed", "pass", {}))
    with pytest.raises(generate.NotShown, match="not caught writing a duplicate: exit status 1, outcome fail, "
                                                "anomalies lost"):
        generate.check_naive(write_result(tmp_path / "lost", "fail", {"lost": {"count": 3}}))
    with pytest.raises(generate.NotShown, match="printed no report line"):
        generate.check_fixed(generate.Output(["python"], "harness: error: no images", 3))
    generate.check_fixed(write_result(tmp_path / "fixed", "pass", {}))

    fault = generate.step()
    explained = ('"explanation": "written 2 times: p0@3 in transaction (pid 7, epoch 0) by spark-driver (driver), '
                 'committed at 20.5 s; p0@1012 in transaction (pid 7, epoch 1) by spark-driver (driver), committed '
                 'at 31.0 s; between them: kill:sender@txn.commit at 20.5 s"')
    generate.check_explanation(generate.Output(["grep"], explained, 0), fault)
    for wrong in (explained.replace("pid 7, epoch 1", "pid 8, epoch 0"), explained.split("; between")[0],
                  explained.replace("committed at 31.0", "never committed nor aborted")):
        with pytest.raises(generate.NotShown, match="not the one the page reads"):
            generate.check_explanation(generate.Output(["grep"], wrong, 0), fault)

    certified = ("[1/3] baseline  PASS  50 s  -\n[2/3] kill-sender-txn.commit  PASS  61 s  -\n"
                 "fixed_sink.py:sink with pipeline passthrough: quick: passed 2 of 30 applicable fault classes "
                 "(not a certification), 3/3 scenarios passed, quick matrix, 4 min 2 s")
    generate.check_certify(generate.Output(["python"], certified, 0))
    with pytest.raises(generate.NotShown, match="quick certification did not pass"):
        generate.check_certify(generate.Output(["python"], certified.replace("commit  PASS", "commit  FAIL"), 1))
