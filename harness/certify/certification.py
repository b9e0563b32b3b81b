"""`certify`: run the matrix for one sink on one cluster (or spread over several worker processes,
harness.certify.scheduler), print outcomes as they come, write a certificate folder (index.html,
certificate.json, JUnit XML). Exit 0 only when what was asked held: a full matrix certified, a quick one
every row passed (harness.errors.EXIT_CODES)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.certify.certificate import CERTIFICATE, NOT_TRIED, write_certificate
from harness.certify.matrix import ANY, BASELINE, BROKER_MATRIX, MATRIX, flink_matrix, table_rows
from harness.certify.room import Sizing, shape_key
from harness.certify.rows import (
    MatrixRun,
    Row,
    checked_subject,
    matrix_session,
    observed,
    plan_after_baseline,
    print_row,
    run_row,
)
from harness.certify.scheduler import MOST_CLUSTERS, certify_spread, spread_note, worker_engines
from harness.certify.shards import Shard, shard_of
from harness.certify.worker import CertifyJob
from harness.checker.judge import EXIT_STATUS, INEFFECTIVE
from harness.checker.verdict import FAIL, PASS, UNKNOWN
from harness.cluster import images
from harness.cluster.engine import engine_socket_url
from harness.errors import EXIT_NOT_EVERY_CLASS, EXIT_OK, BadInput
from harness.faults.space import MIN_BROKERS, TABLE, Observation
from harness.output.registry import store
from harness.report.folders import certificate_dir
from harness.settings import FLINK, FULL_CERTIFICATION_BROKERS, SETTINGS, from_environment
from harness.subject.bundle import resolved
from harness.subject.code_spec import CodeSpec
from harness.subject.pipeline import Pipeline
from harness.subject.shipment import check_unchanged, shipments


def certify(run: MatrixRun, quick: bool, out: Path | None = None, dry_run: bool = False, workers: int | None = None,
            docker_hosts: str = "", shard: Shard | None = None) -> int:
    """Certify `run.sink` with `run.pipeline` (a full matrix on 3 brokers unless the `brokers` setting says
    otherwise), or run one shard of it; the exit status: 1 a row failed or was ineffective, 3
    (otherwise) a row is unknown, 4 (otherwise) a full matrix that left an applicable class untried, else 0.
    `workers` None: a matrix on one engine spreads over the clusters that shorten it as memory allows
    (harness.certify.room); a Flink job's, and one given `docker_hosts`, runs on one cluster."""
    if not quick:  # on fewer brokers a full certification could never say "certified"
        os.environ.setdefault(SETTINGS["brokers"].env, str(FULL_CERTIFICATION_BROKERS))
    flink = run.engine == FLINK
    if flink and (workers not in (None, 1) or docker_hosts):
        raise BadInput("--engine flink runs every row on one Flink cluster: give no --workers or --docker-hosts "
                       "(--shard K/N spreads a matrix over machines)")
    sized = workers is None and not docker_hosts and not flink
    engines = worker_engines(MOST_CLUSTERS if sized else 1 if workers is None else workers, docker_hosts,
                             engine_socket_url())
    sink, pipeline = checked_subject(run)
    if dry_run:
        print_plan(sink, pipeline, quick, run.output, run.store, run.engine)
        if shard is not None:
            print(f"shard {shard.name}: its own baseline, then rows i of the plan after it where i % {shard.count} "
                  f"== {shard.index - 1}")
        if len(engines) > 1:
            print("\n".join(spread_note(engines, sized)))
        return EXIT_OK
    if out is not None and os.path.lexists(out / CERTIFICATE):
        raise BadInput(f"--out {out} holds a certificate already ({out / CERTIFICATE}): a certificate is never "
                       "overwritten; give another folder")
    started = time.monotonic()
    sizing = Sizing(shape_key(engines[0], from_environment("brokers"))) if sized else None
    if len(engines) > 1:
        folder, seen, rows = certify_spread(CertifyJob(run, shipments()), sink, engines, quick, out, shard, sizing)
    else:
        if docker_hosts:  # one worker: the first engine, as worker 0 of a spread run
            os.environ["DOCKER_HOST"] = engines[0]
        folder, seen, rows = _on_one_cluster(run, quick, out, shard)
    for code, what in ((sink, "sink"), (pipeline.code, "pipeline")):  # what the rows ran is what is attested
        if code.shipment is not None:
            check_unchanged(code.shipment, what, code.spec)
    certificate = write_certificate(folder, sink, pipeline, seen, quick, run.seed, rows, run.restarts,
                                    shard_section(shard, seen, run) if shard else None,
                                    sizing.notes if sizing else None, run.store, shipped_dependencies(run),
                                    run.engine)
    print(f"certificate: {folder}/{CERTIFICATE}, {folder}/index.html, {folder}/junit.xml")
    passed = sum(r.outcome == PASS for r in rows)
    minutes, secs = divmod(round(time.monotonic() - started), 60)
    print(f"{sink.spec} with pipeline {pipeline.name}: {certificate['verdict']}, "
          f"{passed}/{len(rows)} scenarios passed, {'quick' if quick else 'full'} matrix, {minutes} min {secs} s")
    # a shard never certifies alone: its rows decide its status, the merged certificate the certification's
    status = certification_status([r.outcome for r in rows], quick or shard is not None, certificate["certified"])
    if status == EXIT_NOT_EVERY_CLASS:
        untried = [c["class"] for c in certificate["classes"] if c["outcome"] == NOT_TRIED]
        print(f"not certified, exit {EXIT_NOT_EVERY_CLASS}: {len(untried)} applicable classes not tried "
              f"({', '.join(untried)}); certificate.json says why for each (a broker class needs --brokers 3)")
    return status


def shipped_dependencies(run: MatrixRun) -> dict | None:
    """What shipped with the sink in every row (as its workers resolved it, from the cache), None for nothing."""
    if not run.dependencies:
        return None
    return resolved(run.dependencies, images.current().spark.tag).to_dict()


def certification_status(outcomes: list[str], quick: bool, certified: bool) -> int:
    """The exit contract for a certification: the rows' status; a full matrix whose rows all passed but
    that is not certified (a class left untried) is 4, never 0."""
    status = matrix_exit_status(outcomes)
    return EXIT_NOT_EVERY_CLASS if status == EXIT_OK and not quick and not certified else status


def matrix_exit_status(outcomes: list[str]) -> int:
    """A certification's exit status: anomalies (or a row that did not try what it says) outweigh an
    unknown row, which outweighs passes."""
    for outcome in (FAIL, INEFFECTIVE, UNKNOWN):
        if outcome in outcomes:
            return EXIT_STATUS[outcome]
    return EXIT_OK


def shard_section(shard: Shard, seen: Observation, run: MatrixRun) -> dict:
    """What a shard's certificate adds: which shard, what its baseline showed (the merge draws the space
    from it and refuses shards whose spaces differ) and the workload every shard must share."""
    return {"index": shard.index, "count": shard.count, "observation": seen.to_dict(),
            "workload": {"records": run.records, "rate": run.rate, "stall_timeout": run.stall_timeout}}


def _on_one_cluster(run: MatrixRun, quick: bool, out: Path | None,
                    shard: Shard | None) -> tuple[Path, Observation, list[Row]]:
    """Every row (of the shard) in turn on one cluster in this process: the certificate folder, what the
    baseline showed, the rows."""
    rows: list[Row] = []
    with matrix_session(run) as opened:
        folder = out or certificate_dir(opened.cluster.run_id)
        baseline, result = run_row(opened.cluster, run, BASELINE)
        rows.append(baseline)
        print_row(baseline, 1, None)
        seen = observed(result)
        plan = shard_of(shard, plan_after_baseline(run.sink, seen, quick))
        for n, row in enumerate(plan, start=2):
            outcome, _ = run_row(opened.cluster, run, row)
            rows.append(outcome)
            print_row(outcome, n, len(plan) + 1)
    for row in rows:  # linked from the certificate folder, which --out puts elsewhere than the run's reports
        row.report = os.path.relpath(opened.folder / row.report, folder)
    return folder, seen, rows


def print_plan(sink: CodeSpec, pipeline: Pipeline, quick: bool, output: str = "kafka", where: str = "volume",
               engine: str = "spark") -> None:
    """The rows a certification would run: the baseline first, then those that apply to the kind of sink
    it shows (transactional or plain for Kafka; a table sink's for a table `output` on `where`, its commit
    points as its store assumes them), and the state rows when the pipeline keeps state."""
    table = store(output).table
    print(f"{sink.spec} with pipeline {pipeline.name} into the {output} output"
          f"{f' ({where})' if table else ''}, {'quick' if quick else 'full'} matrix: the baseline shows the "
          "fault space\n(the sink's kind, who sends its requests, its transaction timeout, whether the pipeline "
          "keeps state);\nits rows are among these, their durations set from the timeout it shows "
          "(`eo-harness space` prints them):")
    brokers = from_environment("brokers")
    if engine == FLINK:  # a Flink job's space: without Spark's own rows, with its checkpoints'
        rows = flink_matrix(brokers)
    elif table:  # the table's commit points as its store assumes them: no Kafka write point applies
        rows = [BASELINE, *table_rows(output, where, brokers)]
    else:
        rows = [row for row in MATRIX + (BROKER_MATRIX if brokers >= MIN_BROKERS else []) if row.applies_to != TABLE]
    for row in [r for r in rows if r.quick or not quick]:
        applies = "stateful pipelines" if row.stateful else {ANY: "every sink"}.get(row.applies_to,
                                                                                     f"{row.applies_to} sinks")
        print(f"  {row.name:<48} {' '.join(row.faults) or '(no fault)':<36} {applies}")
