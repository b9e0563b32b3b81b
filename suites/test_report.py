"""The scenario page as a user sees it, in headless Chromium: it renders, the swimlanes have a lane per
container with transactions colored by outcome, the fault and the anomaly are drawn, and the events
read in plain words."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.client.records import OutputRecord, Records
from harness.report import write_scenario_page

pytestmark = pytest.mark.integration
T0 = 1_800_000_000.0


def point(t: float, name: str, container: str, connection: int, partition: int, committed: bool | None = None) -> dict:
    return {"t": T0 + t, "type": "point", "point": name, "container": container, "role": "executors",
            "connection": connection, "transactional_id": f"out-p{partition}", "committed": committed}


HISTORY = [
    {"t": T0, "type": "scenario.start", "scenario": "crafted"},
    {"t": T0 + 1, "type": "container.start", "container": "driver-crafted", "role": "driver", "restart": 0},
    {"t": T0 + 2, "type": "batch.planned", "batch": 0},
    point(3, "txn.init", "spark-worker-1", 1, 1), point(3.2, "txn.first_write", "spark-worker-1", 1, 1),
    point(5, "txn.commit", "spark-worker-1", 1, 1, committed=True),
    point(3, "txn.init", "spark-worker-2", 2, 2), point(3.1, "txn.first_write", "spark-worker-2", 2, 2),
    {"t": T0 + 4, "type": "fault.inject", "fault": "kill:executor@txn.first_write#1",
     "trigger": {"container": "spark-worker-2"}},
    {"t": T0 + 4.2, "type": "effect", "fault": "kill:executor@txn.first_write#1", "effect": "SIGKILL to pid 7"},
    {"t": T0 + 6, "type": "recovery", "fault": "kill:executor@txn.first_write#1", "detail": "new executor"},
    # the task retried on the other executor: the same transactional id fences the killed one's transaction
    point(7, "txn.init", "spark-worker-1", 3, 2), point(7.5, "txn.first_write", "spark-worker-1", 3, 2),
    point(9, "txn.commit", "spark-worker-1", 3, 2, committed=True),
    {"t": T0 + 10, "type": "batch.committed", "batch": 0},
    {"t": T0 + 12, "type": "verdict", "outcome": "fail", "guarantee": "at-least-once"},
]
RESULT = {
    "scenario": "crafted",
    "verdict": {"outcome": "fail", "guarantee": "at-least-once", "oracle": "model", "expected": 2, "observed": 3,
                "distinct": 2, "error": None,
                "anomalies": {"duplicate": {"count": 1, "examples": [{"id": "a", "partition": 0, "offset": 2}]}}},
    "read": {"aborted": 0}, "batches": {"committed": [0]}, "input": {"rate": "backlog"},
}
RECORDS = Records(OutputRecord(0, n, None, b'{"id":"a"}', int((T0 + 8 + n) * 1000)) for n in range(3))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    (folder / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in HISTORY))
    return write_scenario_page(folder, RESULT, RECORDS, HISTORY)


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    assert binary, "chromium is not installed: `python -m harness doctor --fix` installs it"
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.gate
def test_the_swimlanes_render_with_a_lane_per_container_and_the_transactions_by_outcome(page: Path) -> None:
    dom = chromium("--dump-dom", page.as_uri()).stdout
    lanes = re.findall(r'<text [^>]*class="lane"[^>]*>([^<]+)</text>', dom)
    assert lanes == ["batches", "driver-crafted", "spark-worker-1", "spark-worker-2", "kafka", "output"]
    assert dom.count('fill="#27ae60" opacity="0.75"') == 2, "two committed transactions"
    assert dom.count('fill="#c0392b" opacity="0.75"') == 1, "the killed executor's, fenced by the retry"
    assert "kill:executor@txn.first_write#1</text>" in dom and "duplicate at partition 0 offset 2" in dom
    assert "spark-worker-1 reached txn.commit for out-p1" in dom and "fault kill:executor@txn.first_write#1 " \
        "took effect: SIGKILL to pid 7" in dom


@pytest.mark.gate
def test_the_page_renders_as_a_picture(page: Path, tmp_path: Path) -> None:
    shots = {}
    for name, uri in (("page", page.as_uri()), ("blank", "about:blank")):
        shots[name] = tmp_path / f"{name}.png"
        chromium(f"--screenshot={shots[name]}", "--window-size=1100,900", uri)
        assert shots[name].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shots["page"].stat().st_size > 10 * shots["blank"].stat().st_size, "the page draws something"
