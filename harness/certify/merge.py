"""`certify merge DIR...`: the shards of one certification (`certify --shard K/N`, each on its own CI
runner) joined into the certificate one run would have written: the same classes, coverage, verdict and
`certified`, each row's report linked from the merged folder.

Only shards of one certification merge: the same sink and pipeline sources, shipped code, versions,
seed, brokers, matrix, restarts and workload, every shard from 1 to N once, baselines that showed the
same fault space, each shard holding exactly its share of the plan. Anything else is bad input, in one
line: a merged certificate must never claim what no run tried. Files in, files out: no Docker."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from harness.certify.certificate import CERTIFICATE, certified, coverage, verdict, write_certificate_files
from harness.certify.certification import certification_status
from harness.certify.matrix import BASELINE, MatrixScenario, rows_for
from harness.certify.rows import Row
from harness.certify.shards import Shard
from harness.checker.verdict import PASS
from harness.cluster.labels import new_run_id
from harness.errors import BadInput
from harness.faults.space import FaultClass, Observation, space
from harness.report.folders import certificate_dir

# what every shard of one certification shares: (certificate key, in words)
SHARED = (("sink_source_sha256", "sink source (sha256)"), ("pipeline_source_sha256", "pipeline source (sha256)"),
          ("shipped", "shipped code"), ("dependencies", "shipped dependencies"),
          ("versions", "versions"), ("seed", "seed"), ("brokers", "brokers"),
          ("matrix", "matrix (quick or full)"), ("restarts", "restarts"))

SHARD_KEYS = ("index", "count", "observation", "workload")  # what `certify --shard` adds
# a scenario row's fields the merge reads, and their JSON types (a shard is a file anyone may have written)
SCENARIO_FIELDS: dict[str, type | tuple[type, ...]] = {"name": str, "faults": list, "outcome": str,
                                                       "anomalies": dict, "seconds": (int, float), "report": str}


@dataclass(frozen=True)
class ShardCertificate:
    """One shard's folder and its certificate.json."""

    folder: Path
    certificate: dict

    @property
    def shard(self) -> Shard:
        return Shard(self.certificate["shard"]["index"], self.certificate["shard"]["count"])

    @property
    def seen(self) -> Observation:
        return Observation.from_dict(self.certificate["shard"]["observation"])


def read_shard(folder: Path) -> ShardCertificate:
    """A shard's certificate from its folder; bad input when there is none or it is not a shard's."""
    path = folder / CERTIFICATE
    try:
        certificate = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"{folder}: no {CERTIFICATE} (give the folders `certify --shard K/N --out DIR` wrote)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput(f"{path}: not a readable certificate ({error})") from None
    if not isinstance(certificate, dict) or not isinstance(certificate.get("shard"), dict):
        raise BadInput(f"{path} is not a shard's certificate (one written by `certify --shard K/N`)")
    lacking = [key for key in (*(key for key, _ in SHARED), "sink", "pipeline", "scenarios") if key not in certificate]
    lacking += [f"shard.{key}" for key in SHARD_KEYS if key not in certificate["shard"]]
    if lacking:
        raise BadInput(f"{path}: a shard's certificate without {', '.join(lacking)} (written by another version?)")
    _check_scenarios(path, certificate["scenarios"])
    return ShardCertificate(folder, certificate)


def _check_scenarios(path: Path, scenarios: object) -> None:
    """Bad input, naming the row and field, for a scenario row the merge could not read as written."""
    if not isinstance(scenarios, list) or not all(isinstance(row, dict) for row in scenarios):
        raise BadInput(f"{path}: its scenarios are not a list of rows")
    for n, row in enumerate(scenarios):
        for field, kind in SCENARIO_FIELDS.items():
            value = row.get(field)
            if not isinstance(value, kind) or isinstance(value, bool) or (
                    field == "faults" and not all(isinstance(step, str) for step in value)):
                raise BadInput(f"{path}: scenario {n} ({str(row.get('name'))[:60]!r}) has a malformed "
                               f"{field}: {json.dumps(value)[:80]}")


def merge(folders: list[Path], out: Path | None) -> int:
    """Write the merged certificate folder (`out`, else a new run's certificate folder) and say its verdict;
    the exit status a single run's would have been."""
    out = out or certificate_dir(new_run_id())
    if os.path.lexists(out / CERTIFICATE):
        raise BadInput(f"--out {out} holds a certificate already ({out / CERTIFICATE}): a certificate is never "
                       "overwritten; give another folder")
    certificate = merged_certificate([read_shard(folder) for folder in folders], out)
    write_certificate_files(out, certificate)
    print(f"certificate: {out}/{CERTIFICATE}, {out}/index.html, {out}/junit.xml")
    scenarios = certificate["scenarios"]
    print(f"{certificate['sink']} with pipeline {certificate['pipeline']}: {certificate['verdict']}, "
          f"{sum(s['outcome'] == PASS for s in scenarios)}/{len(scenarios)} scenarios passed in "
          f"{len(folders)} shards, {certificate['matrix']} matrix")
    return certification_status([s["outcome"] for s in scenarios], certificate["matrix"] == "quick",
                                certificate["certified"])


def merged_certificate(shards: list[ShardCertificate], out: Path) -> dict:
    """The certificate of the whole matrix from its shards (checked to be one certification's, every
    shard once), its report links relative to `out`."""
    _check_shared(shards)
    ordered = _check_complete(shards)
    seen = ordered[0].seen
    _check_space(ordered)
    plan = rows_for(seen, ordered[0].certificate["matrix"] == "quick")
    rows = {}
    for part in ordered:
        rows.update(_share(part, plan, out))
    scenarios = [rows[BASELINE.name], *[rows[_baseline_of(part.shard)] for part in ordered[1:]],
                 *[rows[row.name] for row in plan]]
    as_rows = [_row(s) for s in scenarios]
    classes = coverage(seen, as_rows)
    merged = {key: value for key, value in ordered[0].certificate.items() if key not in ("shard", "spread")}
    merged.update(classes=classes, verdict=verdict(classes, as_rows, merged["matrix"] == "quick"),
                  certified=certified(classes, as_rows), scenarios=scenarios,
                  merged_from=[{"shard": part.shard.name, "folder": _link(part.folder, out)} for part in ordered])
    return merged


def _check_shared(shards: list[ShardCertificate]) -> None:
    """The same certification: bad input naming the first setting two shards differ in."""
    first = shards[0]
    for other in shards[1:]:
        for key, words in (*SHARED, ("shard.count", "shard count"), ("shard.workload", "workload")):
            mine, theirs = _value(first.certificate, key), _value(other.certificate, key)
            if mine != theirs:
                raise BadInput(f"the shards differ in their {words}: {_who(first, key)} has {_shown(mine, theirs)}, "
                               f"{_who(other, key)} has {_shown(theirs, mine)}; merge only the shards of one "
                               "certification")


def _who(part: ShardCertificate, key: str) -> str:
    """A shard's folder in a refusal, with the sink's or pipeline's name when their sources differ: a hash
    alone does not say which sink a shard certified."""
    named = {"sink_source_sha256": "sink", "pipeline_source_sha256": "pipeline"}.get(key)
    return f"{part.folder} ({named} {part.certificate[named]})" if named else str(part.folder)


def _check_complete(shards: list[ShardCertificate]) -> list[ShardCertificate]:
    """The shards in order, 1 to N, each once; bad input naming a duplicate or a missing one."""
    by_index: dict[int, ShardCertificate] = {}
    for part in shards:
        given = by_index.get(part.shard.index)
        if given is not None:
            raise BadInput(f"shard {part.shard.name} given twice: {given.folder} and {part.folder}")
        by_index[part.shard.index] = part
    count = shards[0].shard.count
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in by_index]
    if missing:
        raise BadInput(f"shard {', '.join(missing)} missing: give the folders of all {count} shards")
    return [by_index[k] for k in range(1, count + 1)]


def _check_space(shards: list[ShardCertificate]) -> None:
    """Every shard's baseline showed the same fault space (the same classes, tried by the same faults)."""
    first = space(shards[0].seen)
    for other in shards[1:]:
        theirs = space(other.seen)
        if theirs != first:
            raise BadInput(f"the shards' baselines showed different fault spaces: shard {shards[0].shard.name} "
                           f"and shard {other.shard.name} differ in {_difference(first, theirs)}; run the shards "
                           "again (the sink's behaviour differs between runs)")


def _share(part: ShardCertificate, plan: list[MatrixScenario], out: Path) -> dict[str, dict]:
    """A shard's rows by name, linked from `out` (its baseline renamed after shard 1's); bad input when it
    holds other rows than its baseline and its share of the plan."""
    scenarios = part.certificate["scenarios"]
    expected = [BASELINE.name, *[row.name for row in part.shard.share(plan)]]
    if [s["name"] for s in scenarios] != expected:
        raise BadInput(f"{part.folder}: shard {part.shard.name} holds rows {[s['name'] for s in scenarios]}, not its "
                       f"baseline and its share of the plan {expected}")
    rows = {}
    for scenario in scenarios:
        name = _baseline_of(part.shard) if scenario["name"] == BASELINE.name else scenario["name"]
        report = _link(part.folder / scenario["report"], out) if scenario["report"] else ""
        rows[name] = {**scenario, "name": name, "report": report, "shard": part.shard.name}
    return rows


def _baseline_of(shard: Shard) -> str:
    """A shard's baseline in the merged certificate: shard 1's is the baseline, the others' are named."""
    return BASELINE.name if shard.index == 1 else f"{BASELINE.name}-shard-{shard.index}-of-{shard.count}"


def _row(scenario: dict) -> Row:
    """A certificate's row as the coverage and verdict count it."""
    return Row(MatrixScenario(scenario["name"], tuple(scenario["faults"])), scenario["outcome"], scenario["anomalies"],
               scenario["seconds"], scenario["report"], scenario["error"])


def _link(path: Path, out: Path) -> str:
    return os.path.relpath(os.path.abspath(path), os.path.abspath(out))


def _value(certificate: dict, key: str) -> object:
    """A certificate's value at `key` (`a.b`: b inside a)."""
    value: object = certificate
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _shown(value: object, other: object) -> str:
    """A value in a refusal: of a mapping, only the entries that differ from `other`'s."""
    if isinstance(value, dict) and isinstance(other, dict):
        value = {k: v for k, v in value.items() if other.get(k) != v}
    return json.dumps(value, sort_keys=True)


def _difference(mine: list[FaultClass], theirs: list[FaultClass]) -> str:
    """How two fault spaces differ, in words: classes only one has, else the first class tried otherwise."""
    names, other_names = {c.name for c in mine}, {c.name for c in theirs}
    if names != other_names:
        return (f"classes only the first has: {sorted(names - other_names) or 'none'}, only the second: "
                f"{sorted(other_names - names) or 'none'}")
    other = {c.name: c for c in theirs}
    changed = next((c for c in mine if other[c.name] != c), None)
    if changed is None:
        return "the order of their classes"
    return f"how class {changed.name} is tried: {list(changed.faults)} and {list(other[changed.name].faults)}"
