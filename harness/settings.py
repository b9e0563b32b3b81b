"""Every setting a user gives more than one way, with its one default: the CLI's flags and the pytest
plugin's options, environment variables and ini keys are all made from this table.

Precedence, everywhere: a test's marker > the command line > the environment > the ini file > the default.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from harness import versions
from harness.driver.state_stores import DEFAULT_STATE_STORE, STATE_STORES
from harness.errors import BadInput
from harness.output.registry import NAMES

ENGINES = ("spark", "flink")  # the stream engines a scenario runs on: Spark is the default
FLINK = ENGINES[1]


@dataclass(frozen=True)
class Setting:
    """One setting: its name (an argparse dest, a marker's name), default, help text and value type."""

    name: str
    default: str  # as text, as the environment or an ini file gives it
    help: str
    type: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    pytest: bool = False  # also a pytest option with an ini key (the plugin's settings)
    many: bool = False  # a list: the flag given again adds one (as spark-submit's --conf); one per line elsewhere

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "HARNESS_" + self.name.upper()

    @property
    def ini(self) -> str | None:
        """The pytest ini key, for the settings the plugin takes; None for the CLI's alone."""
        return "harness_" + self.name if self.pytest else None


class OutOfRange(argparse.ArgumentTypeError, ValueError):
    """A setting's value outside what it takes: argparse and pytest print its words (a plain ValueError
    they replace with "invalid value"), and a reader of the environment catches it as a ValueError."""


def whole_number(text: str, flag: str, low: int, high: int | None = None) -> int:
    """`text` as a whole number from `low` (to `high`), else OutOfRange saying the range."""
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or number < low or (high is not None and number > high):
        raise OutOfRange(f"{flag} {text}: a whole number " + (f"between {low} and {high}" if high is not None
                                                              else f"from {low}"))
    return number


def positive_number(text: str, flag: str, what: str) -> float:
    """`text` as a finite number above 0, else OutOfRange."""
    try:
        number = float(text)
    except ValueError:
        number = float("nan")
    if not 0 < number < float("inf"):
        raise OutOfRange(f"{flag} {text}: {what} above 0")
    return number


def broker_count(text: str) -> int:
    """A number of brokers, 1 to 5."""
    return whole_number(text, "--brokers", 1, 5)


def restart_count(text: str) -> int:
    """Restarts of a failed query, 0 to 10."""
    return whole_number(text, "--restarts", 0, 10)


def record_count(text: str) -> int:
    """Records of input a scenario produces: at least one (nothing to check else)."""
    return whole_number(text, "--records", 1)


def stall_seconds(text: str) -> float:
    return positive_number(text, "--stall-timeout", "a number of seconds")


def records_per_second(text: str) -> float:
    return positive_number(text, "--live-rate", "a number of records per second")


def image_age_days(text: str) -> float:
    """Days an image may age before it is rebuilt: a number above 0 (0 would rebuild at every command)."""
    return positive_number(text, "--image-max-age", "a number of days")


def reports_folder(text: str) -> str:
    """Where reports go: a folder, or a path where one can be made (a file there is refused before anything
    starts, rather than found when the first report is written)."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise OutOfRange(f"--reports {text}: a file, not a folder")
    return text


def archive_url(text: str) -> str:
    """An apt archive's URL (scheme://...), or empty for none given: a bare host name would fail deep in a build."""
    if text and not re.fullmatch(r"[a-z][a-z0-9+.-]*://\S+", text):
        raise OutOfRange(f"{text!r}: an archive's URL, e.g. http://127.0.0.1:3142/debian")
    return text


FULL_CERTIFICATION_BROKERS = 3  # every broker class applies from 3 brokers: "certified" needs no flag
# Names a setting had before; the CLI and the plugin refuse them, saying what to write instead.
RENAMED = {"rate": "--rate was split in two: --live-rate R (certify, explore, pytest: the matrix's live-input "
                   "rows) or --input-rate R (run: this scenario's input, live)"}
RENAMED_ENV = {"HARNESS_RATE": "HARNESS_RATE is no longer read: write HARNESS_LIVE_RATE (the matrix's live-input "
                               "rows; run's --input-rate has no variable)"}

SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("pipeline", "passthrough", "a catalog name (passthrough, fraud_windows, ...), a dotted module or "
            "path/to/pipeline.py; without a model, checked against fault-free runs of itself", pytest=True),
    Setting("sink", "transactional", "a catalog name (transactional, builtin_kafka, ...), a dotted module or "
            "file.py:sink", pytest=True),
    Setting("output", NAMES[0], "where the sink writes and the harness reads what is committed: the output "
            "topic (kafka, read_committed) or a table (its latest committed version, with the store's own commit "
            "history); the sink's context says where (docs/reference/outputs.md)", choices=NAMES, pytest=True),
    Setting("store", "volume", "where a table lives: the run's shared volume, or an S3 server in the run that "
            "the system under test reaches through the gate (delta, iceberg; docs/guides/tables/object-storage.md)",
            choices=("volume", "s3"), pytest=True),
    Setting("engine", ENGINES[0], "the stream engine: spark runs --pipeline and --sink, flink runs --job on a "
            "Flink session cluster (docs/guides/flink.md)", choices=ENGINES, pytest=True),
    Setting("job", "kafka_exactly_once", "with --engine flink: the Flink job, a catalog name (kafka_exactly_once, "
            "...), a dotted module or a file with job(env, context)", pytest=True),
    Setting("py_package", "", "a Python package the sink imports, as a pip requirement (name, name==1.2): fetched on "
            "the host as a wheel for the Spark image's Python and platform, with its dependencies, and shipped to the "
            "driver and every executor (docs/guides/your-sink.md); give the flag again for another", many=True,
            pytest=True),
    Setting("requirements", "", "a requirements file, or a project's pyproject.toml (its [project] dependencies), "
            "whose packages ship as --py-package's do", pytest=True),
    Setting("packages", "", "Maven coordinates group:artifact:version, comma-separated, as spark-submit's --packages: "
            "resolved on the host with their runtime dependencies (those the Spark image has are not shipped again) "
            "and put on the class path of the driver and every executor", pytest=True),
    Setting("conf", "", "a Spark setting of the sink, key=value, as spark-submit's --conf; give the flag again for "
            "another; a setting the harness owns (the master, the checkpoint, the faults' timing) is refused",
            many=True, pytest=True),
    Setting("engine_read", "no", "yes: a table the harness finds an anomaly in (on the volume or on S3) is "
            "also read by Spark's own reader, and the result says what it returns beside the harness's read "
            "(docs/guides/reports.md)", choices=("no", "yes"), pytest=True),
    Setting("records", "20000", "records of input a scenario produces (1 or more)", record_count),
    Setting("seed", "1", "the workload's seed (and a random schedule's)", int),
    Setting("stall_timeout", "180", "seconds a scenario may go without progress before it is incomplete "
            "(there is no fixed deadline, so larger workloads finish)", stall_seconds, pytest=True),
    Setting("restarts", "3", "times a query that fails on its own is started again on its checkpoint, as a "
            "deployment's supervisor does (after a back-off of 2, 4, 8 ... s); when they run out the row fails "
            "as a crash loop; 0: no supervisor, a failed query fails the row", restart_count, pytest=True),
    Setting("live_rate", "2000", "records/s of the matrix's live-input rows (the other rows drain a backlog)",
            records_per_second, pytest=True),
    Setting("state_store", DEFAULT_STATE_STORE, "the state store provider of a stateful pipeline",
            choices=tuple(sorted(STATE_STORES))),
    Setting("reports", "reports", "where reports go (relative to the current folder)", reports_folder, pytest=True),
    Setting("kafka", versions.KAFKA_VERSIONS[0], f"Kafka broker release (known to work: "
            f"{', '.join(versions.KAFKA_VERSIONS)})", pytest=True),
    Setting("spark", versions.SPARK_VERSIONS[0], f"Spark release, or a line (4.1) for its known one (known to "
            f"work: {', '.join(versions.SPARK_VERSIONS)})", pytest=True),
    Setting("flink", versions.FLINK_VERSIONS[0], "with --engine flink: Flink release, or a line (2.2) for its "
            f"known one, with that line's Kafka connector (known to work: {', '.join(versions.FLINK_VERSIONS)})",
            pytest=True),
    Setting("iceberg", "", "Apache Iceberg release in the Spark image, of the Spark line's (known to work: "
            + "; ".join(f"Spark {line}: {', '.join(known)}" for line, known in versions.ICEBERG_VERSIONS.items())
            + "); empty: the line's first", pytest=True),
    Setting("brokers", "1", "Kafka brokers in the cluster (1 to 5): with 3 or more, every topic has 3 replicas "
            "and min.insync.replicas=2, and the broker fault classes (coordinator, leader, controller, ISR) "
            "join the matrix; a full certification (certify without --quick, pytest --sink) runs on "
            f"{FULL_CERTIFICATION_BROKERS} unless given", broker_count, pytest=True),
    Setting("registry", "", "a registry (host[:port][/path], e.g. 127.0.0.1:5000/eo) that every command pulls "
            "the images it needs from before building any: only what it lacks is built here (`eo-harness images "
            "push REGISTRY` fills it; credentials are the engine's, `docker login`)", pytest=True),
    Setting("image_max_age", "7", "days after which an image is rebuilt even when its inputs have not changed, so "
            "that the base image takes Debian's security updates (bookworm-security); a child image older than its "
            "parent is rebuilt too", image_age_days, pytest=True),
    Setting("debian_mirror", "", "the Debian archive (a URL) the images are built from: the base image's "
            f"Debian {versions.DEBIAN_SUITE} and PostgreSQL's packages; empty: the first Debian archive in the host's "
            "apt sources. A host whose apt names none (Ubuntu's) sets it, or takes the images from a registry",
            archive_url, pytest=True),
    Setting("debian_security_mirror", "", f"Debian's security archive (a URL) the base image takes "
            f"{versions.DEBIAN_SUITE}-security from; empty: the one in the host's apt sources, else none (the base "
            "gets no security updates, and the build says so)", archive_url, pytest=True),
    Setting("docker_hosts", "", "comma-separated DOCKER_HOST URLs: worker i runs its cluster on engine i "
            "(modulo their number); default: every worker on the default engine", pytest=True),
)}
assert SETTINGS["kafka"].env == versions.KAFKA_ENV and SETTINGS["spark"].env == versions.SPARK_ENV
assert SETTINGS["flink"].env == versions.FLINK_ENV
assert SETTINGS["iceberg"].env == versions.ICEBERG_ENV


class PytestConfig(Protocol):
    """The part of pytest.Config a setting is read from (this module does not import pytest)."""

    def getoption(self, name: str) -> Any: ...

    def getini(self, name: str) -> Any: ...


def from_environment(name: str, environ: Mapping[str, str] = os.environ) -> Any:
    """A setting's value from the environment, else its default."""
    setting = SETTINGS[name]
    return setting.type(environ.get(setting.env) or setting.default)


def given(config: PytestConfig, name: str) -> str | None:
    """A setting as a pytest run gives it (command line > environment > ini), None when it is not given."""
    setting = SETTINGS[name]
    for found in (config.getoption(name), os.environ.get(setting.env), setting.ini and config.getini(setting.ini)):
        if found not in (None, "", []):
            return "\n".join(found) if isinstance(found, list) else str(found)
    return None


def from_pytest(config: PytestConfig, name: str) -> Any:
    """A setting of a pytest run (command line > environment > ini > default), as its type."""
    setting = SETTINGS[name]
    return setting.type(given(config, name) or setting.default)


def matrix_subject(config: PytestConfig) -> str | None:
    """What the session certifies, a test id per row of its matrix: the sink given with `--sink`, or with
    `--engine flink` the job given with `--job`; None when neither is. BadInput for a sink given to Flink, or a
    Flink session without a job (the plugin's Flink tests are a job's matrix)."""
    if from_pytest(config, "engine") != FLINK:
        return given(config, "sink")
    if given(config, "sink"):
        raise BadInput("--engine flink runs a Flink job: give it with --job, not --sink")
    job = given(config, "job")
    if job is None:
        raise BadInput("--engine flink: give the Flink job whose matrix to run with --job (kafka_exactly_once, "
                       "path/to/job.py)")
    return job


def renamed_in_environment(environ: Mapping[str, str] = os.environ) -> str | None:
    """What to write instead of an old setting's environment variable (HARNESS_RATE), None when none is set."""
    return next((instead for name, instead in RENAMED_ENV.items() if name in environ), None)


def help_text(setting: Setting) -> str:
    return f"{setting.help} (env {setting.env}; default {setting.default or 'none'})"
