"""The gate on a real PostgreSQL: a client in a container of the run (psycopg, as a foreachBatch sink
writes) reaches the server through the relay's PostgreSQL port, the gate and toxiproxy; the gate reports
each commit as sent and as answered, and a commit cut before the server is rolled back, one whose answer
is dropped is committed while its client gets an error. What is committed is read straight from the
server, not through the gate."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from harness.cluster.spark import SparkDriver
from harness.cluster.topology import Cluster
from harness.gate.points import GateEvent, Hold, Observe
from harness.output.postgres.server import PORT, attached

pytestmark = pytest.mark.integration

# Each write on a connection of its own (a dropped commit closes its connection): 1 and 4 autocommit
# (psycopg sends them Parse/Bind/Execute/Sync), 2 and 3 in a block ended by a simple Query's COMMIT.
PROBE = """
import json, sys, psycopg
route, direct = sys.argv[1], sys.argv[2]
with psycopg.connect(direct, autocommit=True) as setup:
    setup.execute("CREATE TABLE IF NOT EXISTS gate_probe (k int PRIMARY KEY)")
said = {}
for k, block in ((1, False), (2, True), (3, True), (4, False)):
    try:
        with psycopg.connect(route, autocommit=not block) as connection:
            connection.execute("INSERT INTO gate_probe VALUES (%s)", (k,))
            if block:
                connection.commit()
        said[k] = "ok"
    except psycopg.Error as error:
        said[k] = type(error).__name__
with psycopg.connect(direct) as check:
    rows = [k for (k,) in check.execute("SELECT k FROM gate_probe ORDER BY k")]
print(json.dumps({"said": said, "committed": rows}))
"""


class CutAndDrop:
    """The second commit cut as it arrives (held, then its connection closed), the third's answer dropped."""

    def __init__(self) -> None:
        self.sent = 0
        self.answered = 0
        self.events: list[GateEvent] = []

    def on_point(self, event: GateEvent) -> bool:
        self.events.append(event)
        if event.answered:
            self.answered += 1
            return self.answered == 2  # commits 1 and 3 are answered (2 never reaches the server)
        self.sent += 1
        return self.sent == 2

    def on_hold(self, hold: Hold) -> None:
        hold.drop()


@pytest.fixture
def probe(cluster: Cluster) -> Iterator[SparkDriver]:
    """A container of the run in the driver's role, where the client runs."""
    driver = cluster.new_driver("pg-gate-probe", [])
    driver.with_command(["sleep", "infinity"])
    driver.waiting_for(None)  # type: ignore[arg-type]
    driver.start()
    yield driver
    cluster.remove_driver(driver)


def test_commits_through_the_gate_are_cut_dropped_and_reported(cluster: Cluster, probe: SparkDriver) -> None:
    sinks = attached(cluster).for_sinks()
    # the system under test's route: the gate
    assert (sinks.host, sinks.port) == cluster.relay.service_client_address("postgres")
    assert cluster.gate is not None
    interceptor = CutAndDrop()
    recorded: list[dict] = []
    cluster.gate.interceptor = interceptor
    cluster.gate.record = lambda type, **fields: recorded.append({"type": type, **fields})
    server = attached(cluster).server
    direct = sinks.conninfo().replace(f"host={sinks.host} port={sinks.port}", f"host={server.alias} port={PORT}")
    try:
        result = probe.exec(["python", "-c", PROBE, sinks.conninfo(), direct])
    finally:  # the session's later tests find the gate as it was
        cluster.gate.interceptor, cluster.gate.record = Observe(), lambda type, **fields: None
    assert result.exit_code == 0, result.output.decode()
    out = json.loads(result.output.decode().strip().splitlines()[-1])
    assert out["committed"] == [1, 3, 4]  # 2 cut before the server: rolled back; 3 committed, its answer lost
    assert out["said"] == {"1": "ok", "2": "OperationalError", "3": "OperationalError", "4": "ok"}
    points = [(e["phase"], e["how"], e["via"], e.get("committed")) for e in recorded if e["type"] == "point"]
    assert points == [("request", "autocommit", "E", None), ("response", "autocommit", "E", True),
                      ("request", "commit", "Q", None),  # 2: cut
                      ("request", "commit", "Q", None), ("response", "commit", "Q", True),  # 3: answer dropped
                      ("request", "autocommit", "E", None), ("response", "autocommit", "E", True)]
    assert {e["role"] for e in recorded if e["type"] == "point"} == {"driver"}
    assert [(e["type"], e["phase"]) for e in recorded if e["type"] in ("hold", "drop")] == [
        ("hold", "request"), ("drop", "request"), ("hold", "response"), ("drop", "response")]
