"""What a sink needs besides its own code, given as Spark users give it to spark-submit: Python packages
(pip requirements named one by one, or a requirements file, or a project's pyproject.toml), Maven
coordinates (`--packages group:artifact:version`) and Spark settings (`--conf key=value`). Checked here,
on the host, before any image or cluster work: a setting the harness owns is refused by name, as is a
coordinate or requirement that is not one."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from harness import settings
from harness.cluster.spark import OWNED_CONF
from harness.driver.state_stores import STATE_STORES
from harness.errors import BadInput

# Settings the harness sets for every run: the cluster it built, the faults' timing, where the code and
# its dependencies are found. A user's value would change what is tested, not the sink.
# (spark.executor.instances is unset: the cores give the executors, and the faults count on their number)
OWNED = OWNED_CONF | {key for conf in STATE_STORES.values() for key in conf} | {
    "spark.sql.streaming.checkpointLocation", "spark.pyspark.python", "spark.pyspark.driver.python",
    "spark.executor.instances"}
OWNED_PREFIXES = ("spark.speculation", "spark.eventLog.", "spark.sql.streaming.stateStore.rocksdb.",
                  "spark.dynamicAllocation.")
# Spark's own ways to fetch or ship code, refused with the harness's way: the containers reach no
# repository or index, and what ships is hashed onto the certificate.
INSTEAD = {"spark.jars.packages": "--packages", "spark.jars": "--packages", "spark.submit.pyFiles": "--py-package",
           "spark.archives": "--py-package or --requirements", "spark.jars.repositories": "--packages",
           "spark.jars.ivy": "--packages", "spark.jars.ivySettings": "--packages", "spark.files": "--py-package"}
COORDINATE = re.compile(r"[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.+-]+")  # group:artifact:version, as --packages


@dataclass(frozen=True)
class Dependencies:
    """A sink's dependencies, as given: pip requirements, Maven coordinates, Spark settings (sorted by key)."""

    python: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    conf: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.python or self.packages or self.conf)

    def to_dict(self) -> dict:
        return {"python": list(self.python), "packages": list(self.packages), "conf": dict(self.conf)}


SETTINGS = ("py_package", "requirements", "packages", "conf")  # their settings (harness.settings), in this order


def from_settings(value: Callable[[str], str | None]) -> Dependencies:
    """The dependencies the settings give, each setting's text read by `value` (a parsed command line's
    attribute, the environment, a pytest run's option)."""
    return dependencies(*(value(name) or "" for name in SETTINGS))


def from_environment() -> Dependencies:
    """The dependencies the environment gives (HARNESS_PY_PACKAGE, ...: the plugin's and a worker's)."""
    return from_settings(settings.from_environment)


def dependencies(py_packages: str = "", requirements: str = "", packages: str = "", conf: str = "") -> Dependencies:
    """The dependencies the four settings' texts give (as a flag, the environment or an ini key gives them);
    BadInput naming the first that is wrong."""
    python = [*split(py_packages), *(requirements_of(Path(requirements).expanduser()) if requirements else [])]
    return Dependencies(tuple(dict.fromkeys(requirement(text) for text in python)),
                        tuple(dict.fromkeys(coordinate(text) for text in split(packages, ","))),
                        tuple(sorted(spark_settings(conf).items())))


def split(text: str, also: str = "") -> list[str]:
    """A list setting's items: one per line or separated by white space (or `also`, Spark's comma)."""
    for separator in also:
        text = text.replace(separator, " ")
    return text.split()


def requirement(text: str) -> str:
    """A pip requirement (`name`, `name==1.2`, `name[extra]>=1,<2`), normalized; BadInput otherwise. A
    URL or a path is refused: what ships is resolved from the package index, for the images' Python."""
    try:
        parsed = Requirement(text)
    except InvalidRequirement as error:
        raise BadInput(f"--py-package {text!r}: not a pip requirement ({str(error).splitlines()[0]})") from None
    if parsed.url:
        raise BadInput(f"--py-package {text!r}: a URL or path; name the package (and version) on the index")
    return str(parsed)


def requirements_of(path: Path) -> list[str]:
    """The requirements a file names: a pyproject.toml's `[project] dependencies`, or a requirements file's
    lines (comments and blank lines skipped; pip's options, such as `-r` or `--index-url`, refused)."""
    if not path.is_file():
        raise BadInput(f"--requirements {path}: no such file")
    if path.name == "pyproject.toml":
        try:
            project = tomllib.loads(path.read_text()).get("project", {})
        except tomllib.TOMLDecodeError as error:
            raise BadInput(f"--requirements {path}: not TOML ({error})") from None
        if "dependencies" in project.get("dynamic", []):
            raise BadInput(f"--requirements {path}: its dependencies are dynamic (computed by its build backend); "
                           "give a requirements file or --py-package instead")
        return list(project.get("dependencies", []))
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            raise BadInput(f"--requirements {path}: line {number} is pip's option {line.split()[0]}: only "
                           "requirements are read (the index is the host's pip's own)")
        found.append(line)
    return found


def coordinate(text: str) -> str:
    """A Maven coordinate as spark-submit's --packages takes it: group:artifact:version."""
    if not COORDINATE.fullmatch(text):
        raise BadInput(f"--packages {text!r}: a Maven coordinate is group:artifact:version "
                       "(e.g. org.apache.spark:spark-avro_2.13:4.0.0)")
    return text


def spark_settings(text: str) -> dict[str, str]:
    """`key=value` lines (a flag given again adds one) as Spark settings; BadInput for a line that is not
    one and for a setting the harness owns, saying why or what to give instead."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, equals, value = line.strip().partition("=")
        key = key.strip()
        if not equals or not key.startswith("spark."):
            raise BadInput(f"--conf {line.strip()!r}: a Spark setting is spark.name=value")
        check_not_owned(key)
        found[key] = value.strip()
    return found


def check_not_owned(key: str, others: Mapping[str, str] | None = None, whose: str = "") -> None:
    """BadInput when the harness sets `key` (or, given `others`, the output `whose` sets it)."""
    if key in INSTEAD:
        raise BadInput(f"--conf {key}: the containers fetch nothing; give it with {INSTEAD[key]} (shipped from "
                       "the host and listed on the certificate)")
    if key in OWNED or key.startswith(OWNED_PREFIXES):
        raise BadInput(f"--conf {key}: the harness sets it (the cluster, the faults' timing or the matrix's "
                       "rows depend on it); leave it out")
    if others is not None and key in others:
        raise BadInput(f"--conf {key}: the {whose} output sets it for its table; leave it out")
