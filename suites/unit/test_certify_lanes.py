"""How a spread matrix plans its rows (harness.certify.lanes, harness.certify.room, harness.certify.scheduler):
expected times from the fault specs, longest first, a live row alone, the clusters worth starting and
those the memory holds, which rows ran at once, and a row ineffective beside others run again alone."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.certify import room
from harness.certify.certificate import write_certificate
from harness.certify.lanes import (
    RESTART_S,
    Lanes,
    clusters_worth,
    expected_s,
    held_s,
    longest_first,
    makespan,
    slowdown,
)
from harness.certify.matrix import MATRIX, MatrixScenario, rows_for
from harness.certify.room import MARGIN, RESERVE_BYTES, PeakStore, clusters_that_fit
from harness.certify.rows import Row
from harness.certify.scheduler import Tally, Took
from harness.certify.worker import Finished, Worker
from harness.faults.space import Observation
from harness.subject.code_spec import resolve_sink
from harness.subject.pipeline import load_pipeline

pytestmark = pytest.mark.unit
ROWS = {row.name: row for row in MATRIX}
QUICK_TXN = rows_for(Observation.assumed("transactional", stateful=False), quick=True)
SHARED = Lanes(shared=True)
GIB = 2**30


def test_expected_time_is_the_baselines_plus_what_the_faults_hold_plus_a_drivers_restart() -> None:
    assert held_s(ROWS["lost-commit-response"]) == 65 and expected_s(ROWS["lost-commit-response"], 40) == 105
    assert held_s(ROWS["pause-executor-txn.pre_commit"]) == 40
    assert expected_s(ROWS["kill-sender-txn.commit"], 40) == 40  # instant: as long as the baseline
    assert expected_s(ROWS["kill-driver-txn.pre_commit"], 40) == 40 + RESTART_S


def test_the_quick_matrix_goes_longest_first_its_waits_ahead_of_its_kills() -> None:
    order = [row.name for row in longest_first(QUICK_TXN, 40)]
    assert order == ["delay-endtxn-txn.pre_commit-long", "lost-commit-response", "pause-executor-txn.pre_commit",
                     "speculation-txn.pre_commit", "kill-driver-txn.pre_commit", "kill-sender-txn.commit"]


def test_a_free_cluster_takes_the_longest_row_left() -> None:
    pending = longest_first(QUICK_TXN, 40)
    assert SHARED.next_row(pending, [pending[0]]) == pending[0]  # the first left (the caller removed the running)
    assert Lanes(shared=False).next_row(pending[1:], [pending[0]]) == pending[1]
    assert SHARED.next_row([], [pending[0]]) is None


def test_a_live_row_runs_alone_on_a_shared_machine_and_nothing_goes_beside_it() -> None:
    live, other = ROWS["live-kill-driver-batch.planned"], ROWS["kill-sender-txn.commit"]
    assert live.live
    assert SHARED.next_row([live, other], [ROWS["lost-commit-response"]]) == other  # the live row waits
    assert SHARED.next_row([live], [ROWS["lost-commit-response"]]) is None
    assert SHARED.next_row([live, other], []) == live  # nothing runs: it has the machine
    assert SHARED.next_row([other], [live]) is None  # nothing beside it
    assert Lanes(shared=False).next_row([live], [other]) == live  # clusters on other machines starve nothing


def test_a_row_run_again_alone_waits_for_the_others_and_then_has_the_machine() -> None:
    again = frozenset({"kill-sender-txn.commit"})
    row, other = ROWS["kill-sender-txn.commit"], ROWS["lost-commit-response"]
    assert SHARED.next_row([row], [other], again) is None
    assert SHARED.next_row([row], [], again) == row
    assert SHARED.next_row([other], [row], again) is None


def test_a_live_row_lengthens_the_plan_by_running_alone() -> None:
    live = ROWS["live-baseline"]
    rows = [ROWS["lost-commit-response"], live]
    assert makespan(rows, 2, 40, Lanes(shared=False)) == 105  # beside each other
    assert makespan(rows, 2, 40, SHARED) == 105 + 40  # the live row after the other finished


def test_the_quick_matrix_is_worth_three_clusters_and_a_matrix_of_kills_one() -> None:
    assert [makespan(QUICK_TXN, n, 40, SHARED) for n in (1, 2, 3)] == [460, 235, 165]
    assert clusters_worth(QUICK_TXN, 40, SHARED, 3) == 3
    assert clusters_worth(QUICK_TXN, 40, SHARED, 2) == 2
    live = [replace(ROWS["live-baseline"], name=f"live-{n}") for n in range(3)]
    assert clusters_worth(live, 40, SHARED, 3) == 1  # each alone: more clusters shorten nothing


def test_a_plan_gives_the_scheduler_its_rows_in_order_and_what_they_are_worth_in_clusters() -> None:
    plan = SHARED.plan(QUICK_TXN, 40, 3)
    assert list(plan.rows) == longest_first(QUICK_TXN, 40)
    assert plan.clusters() == clusters_worth(QUICK_TXN, 40, SHARED, 3) == 3
    assert plan.clusters(0.45) == clusters_worth(QUICK_TXN, 40, SHARED, 3, load=0.45)
    assert SHARED.plan(QUICK_TXN, 40, 1).clusters() == 1  # never more than the workers there are


def test_a_cluster_is_started_only_where_its_rows_finish_sooner_with_the_cores_shared() -> None:
    kills = [ROWS["kill-sender-txn.commit"], replace(ROWS["kill-sender-txn.commit"], name="kill-2")]
    assert slowdown(1, 0.9) == 1.0 and slowdown(2, 0.9) == 1.8 and slowdown(3, 0.2) == 1.0
    assert makespan(kills, 2, 40, SHARED, load=1.0) == 2 * makespan(kills, 2, 40, SHARED)  # work only, twice as long
    assert clusters_worth(kills, 40, SHARED, 3) == 2  # cores not shared: each row on its own
    assert clusters_worth(kills, 40, SHARED, 3, load=1.0) == 1  # one cluster's work takes the machine: no gain
    assert clusters_worth(kills, 40, Lanes(shared=False), 3, load=1.0) == 2  # machines of their own
    assert clusters_worth(QUICK_TXN, 40, SHARED, 3, load=1.0) >= 2  # its holds are waits: overlapping them pays


def test_a_third_cluster_must_cut_a_fifth_of_the_plan_on_cores_the_clusters_already_fill() -> None:
    """Measured on 2 cores, one cluster's work taking 0.9 of them: three clusters ran the quick matrix in
    4 min 32 s, two in 3 min 35 s, where the plan promised the third a tenth less; with work taking 0.6
    of them, three ran it in 2 min 50 s to two's 3 min 1 s."""
    assert clusters_worth(QUICK_TXN, 35, SHARED, 3, load=0.45) == 2
    assert clusters_worth(QUICK_TXN, 20, SHARED, 3, load=0.3) == 3


def test_the_sampler_measures_the_cores_a_cluster_s_containers_used(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([(1, {"kafka": 10**9}), (1, {"kafka": 3 * 10**9, "driver": 10**9})])
    monkeypatch.setattr(room, "cluster_usage", lambda run_id: next(readings, (1, {})))
    monkeypatch.setattr(room, "SAMPLE_S", 0.01)
    sampler = room.PeakSampler()
    assert sampler.cores("run-w0") is None
    sampler.watch("run-w0")
    deadline = time.monotonic() + 10
    while sampler.cpu_ns["run-w0"].get("driver") is None and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    sampler._thread.join()
    measured = sampler.cores("run-w0")
    elapsed = sampler.read_at["run-w0"] - sampler.since["run-w0"]
    assert sampler.cpu_ns["run-w0"] == {"kafka": 3 * 10**9, "driver": 10**9}  # a removed driver's time kept
    assert measured == pytest.approx(4 / elapsed)
    time.sleep(0.05)
    assert sampler.cores("run-w0") == measured  # over the time until the last read, not until it is asked


def test_a_clusters_containers_are_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    class SlowContainer:  # an engine that takes its time over each container's stats, as dockerd 20.10 does
        def __init__(self, id: str, cpu: int) -> None:
            self.id, self.cpu = id, cpu

        def stats(self, stream: bool, one_shot: bool) -> dict:
            time.sleep(0.5)
            return {"memory_stats": {"usage": 2}, "cpu_stats": {"cpu_usage": {"total_usage": self.cpu}}}

    containers = [SlowContainer(f"c{i}", i) for i in range(8)]
    client = SimpleNamespace(containers=SimpleNamespace(list=lambda filters: containers))
    monkeypatch.setattr(room, "docker_client", lambda: client)
    started = time.monotonic()
    assert room.cluster_usage("run-w0") == (16, {f"c{i}": i for i in range(8)})
    assert time.monotonic() - started < 2.0  # eight containers' half seconds, not one after the other


def test_a_container_removed_while_its_stats_are_read_is_left_out() -> None:
    from requests.exceptions import JSONDecodeError

    class Removed:  # the engine answers an empty body for a container removed mid-read: not JSON
        id = "gone"

        def stats(self, stream: bool, one_shot: bool) -> dict:
            raise JSONDecodeError("Expecting value", "", 0)

    class Running:
        id = "here"

        def stats(self, stream: bool, one_shot: bool) -> dict:
            return {"memory_stats": {"usage": 2}}

    running = Running()
    assert room.all_stats([Removed(), running]) == [(running, {"memory_stats": {"usage": 2}})]  # type: ignore[list-item]


def test_a_second_cluster_starts_with_the_baseline_only_where_a_cluster_s_known_cores_leave_room(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(room, "available_memory", lambda: 64 * GIB)
    monkeypatch.setattr(room, "engine_cpus", lambda: 2)
    store = PeakStore(tmp_path / "peaks.json")
    store.remember("e", 2 * GIB)
    assert room.Sizing("e", store).at_start([]) == 2  # its cores unknown
    store.remember(room.cores_key("e"), 1.9)
    sizing = room.Sizing("e", store)
    assert sizing.at_start([]) == 1 and "1.9 cores of the engine's 2" in sizing.notes[0]


@pytest.mark.parametrize("available, peak, wanted, running, fits", [
    (None, 2 * GIB, 3, 0, 1),  # memory unknown: one cluster
    (20 * GIB, None, 3, 1, 1),  # no peak measured: no more than runs
    (RESERVE_BYTES + int(2 * 2 * GIB * MARGIN), 2 * GIB, 3, 0, 2),
    (RESERVE_BYTES + int(2 * 2 * GIB * MARGIN) - 1, 2 * GIB, 3, 0, 1),
    (RESERVE_BYTES + int(2 * GIB * MARGIN), 2 * GIB, 3, 1, 2),  # one more next to the running one
    (64 * GIB, 2 * GIB, 3, 1, 3),  # never more than wanted
    (1 * GIB, 2 * GIB, 3, 2, 2),  # never fewer than run
])
def test_clusters_fit_the_memory_measured(available: int | None, peak: int | None, wanted: int, running: int,
                                         fits: int) -> None:
    assert clusters_that_fit(available, peak, wanted, running) == fits


def test_the_sampler_keeps_a_clusters_highest_memory_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([3, 9, 4])  # the driver's memory counts while it runs, then it is removed
    monkeypatch.setattr(room, "cluster_usage", lambda run_id: (next(readings, 2), {}))
    monkeypatch.setattr(room, "SAMPLE_S", 0.01)
    sampler = room.PeakSampler()
    sampler.watch("run-w0")
    deadline = time.monotonic() + 10
    while sampler.peak("run-w0") != 9 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    assert sampler.peak("run-w0") == 9 and sampler.peak("run-w1") is None


def test_a_clusters_peak_is_kept_per_engine_and_shape(tmp_path: Path) -> None:
    store = PeakStore(tmp_path / "peaks.json")
    assert store.known("a") is None
    store.remember("a", 5)
    store.remember("b", 7)
    assert (PeakStore(tmp_path / "peaks.json").known("a"), store.known("b")) == (5, 7)


def finished(worker: int, row: MatrixScenario, outcome: str, at: float) -> Finished:
    return Finished(worker, Row(row, outcome, {}, 1.0, f"{row.name}/index.html", "no copy ran"), Observation(), at)


def test_the_tally_says_which_rows_ran_at_once_and_reruns_an_ineffective_row_alone(tmp_path: Path) -> None:
    tally = Tally([Worker(0, "unix:///a", "r-w0"), Worker(1, "unix:///a", "r-w1")], tmp_path, started=100.0)
    wait, kill, spec = ROWS["lost-commit-response"], ROWS["kill-sender-txn.commit"], ROWS["speculation-txn.pre_commit"]
    tally.took(Took(0, wait, 100.0))
    tally.took(Took(1, kill, 101.0))
    ran = tally.finished(finished(1, kill, "pass", 140.0))
    assert (ran.started_s, ran.beside, ran.worker) == (1.0, ["lost-commit-response"], "w1")
    tally.took(Took(1, spec, 141.0))
    first = tally.finished(finished(1, spec, "ineffective", 180.0))
    assert tally.again(first) and not tally.settled([spec])  # beside the wait: it runs again
    done = tally.finished(finished(0, wait, "pass", 200.0))
    assert done.beside == ["kill-sender-txn.commit", "speculation-txn.pre_commit"]
    tally.took(Took(1, spec, 201.0))
    alone = tally.finished(finished(1, spec, "ineffective", 240.0))
    assert not tally.again(alone) and tally.settled([spec])  # alone, ineffective counts
    assert alone.beside is None and alone.first_try["beside"] == ["lost-commit-response"]
    assert alone.first_try["outcome"] == "ineffective" and alone.started_s == 101.0


def test_an_ineffective_row_that_ran_alone_on_its_machine_counts_at_once(tmp_path: Path) -> None:
    tally = Tally([Worker(0, "unix:///a", "r-w0"), Worker(1, "tcp://b:2375", "r-w1")], tmp_path, started=0.0)
    row, other = ROWS["speculation-txn.pre_commit"], ROWS["lost-commit-response"]
    tally.took(Took(0, row, 1.0))
    assert not tally.again(tally.finished(finished(0, row, "ineffective", 30.0)))
    tally.took(Took(1, other, 31.0))  # on another engine: it takes nothing from the row
    tally.took(Took(0, ROWS["kill-sender-txn.commit"], 32.0))
    ran = tally.finished(finished(0, ROWS["kill-sender-txn.commit"], "ineffective", 60.0))
    assert ran.beside == [other.name] and not tally.again(ran)


def test_the_certificate_says_which_rows_ran_at_once_and_on_which_cluster(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_REPORTS", str(tmp_path / "reports"))
    tally = Tally([Worker(0, "unix:///a", "r-w0"), Worker(1, "unix:///a", "r-w1")], tmp_path / "out", started=0.0)
    wait, spec = ROWS["lost-commit-response"], ROWS["speculation-txn.pre_commit"]
    tally.took(Took(0, wait, 0.0))
    tally.took(Took(1, spec, 1.0))
    tally.finished(finished(1, spec, "ineffective", 40.0))
    tally.finished(finished(0, wait, "pass", 110.0))
    tally.took(Took(1, spec, 111.0))
    tally.finished(finished(1, spec, "pass", 150.0))
    seen = Observation.assumed("transactional", stateful=False)
    certificate = write_certificate(tmp_path / "out", resolve_sink("transactional"), load_pipeline("passthrough"),
                                    seen, True, 1, tally.rows([wait, spec]), 3, spread=["for the rows: 2 clusters"])
    entries = {s["name"]: s for s in certificate["scenarios"]}
    assert certificate["spread"] == {"clusters": ["w0", "w1"], "decided": ["for the rows: 2 clusters"]}
    assert (entries[wait.name]["worker"], entries[wait.name]["started_s"]) == ("w0", 0.0)
    assert entries[wait.name]["beside"] == [spec.name]  # both of its runs
    assert entries[spec.name]["beside"] == [] and entries[spec.name]["outcome"] == "pass"
    assert entries[spec.name]["first_try"]["beside"] == [wait.name]
    page = (tmp_path / "out" / "index.html").read_text()
    assert f"(w0 on unix:///a, from 0 s, beside {spec.name})" in page
    assert "first beside others: ineffective, ran again alone" in page
    assert "rows spread over the clusters w0, w1 (each row says the rows beside it): for the rows: 2 clusters" in page
