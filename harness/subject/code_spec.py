"""Code as users name it: a short name from the harness's catalog (`transactional`, `fraud_windows`), a
dotted module (`harness.catalog.sinks.transactional`) or a file (`path/to/my_sink.py:sink`,
`path/to/pipeline.py`). Resolved and checked on the host before anything starts; a file is shipped to
the driver, which adds it for the executors."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from harness.errors import BadInput
from harness.subject.shipment import Shipment, read_once


@dataclass(frozen=True)
class CodeSpec:
    """Resolved code: what the driver imports, the file it comes from, and whether it must be shipped."""

    spec: str
    module: str
    attribute: str
    source: Path
    shipped: bool  # code outside the harness: copied next to the checkpoints, added with addPyFile
    package: Path | None = None  # a dotted module outside the harness: its top-level package, shipped zipped
    shipment: Shipment | None = None  # the bytes shipped, read once (shipped code only)

    @property
    def source_sha256(self) -> str:
        """The source file's hash: shipped code's as it was read and shipped, the harness's own as it is."""
        if self.shipment is not None:
            return self.shipment.sha256_of(self.source)
        return hashlib.sha256(self.source.read_bytes()).hexdigest()

    @property
    def output(self) -> str | None:
        """The output the code says it writes (a module-level `OUTPUT = "delta"`), None where it says none:
        a sink run against another output would be judged on nothing."""
        return self._declared("OUTPUT")

    @property
    def table(self) -> str:
        """What the sink's table holds (a module-level `TABLE`): `log`, every result appended (the default),
        or `state`, one row per key that an upsert or MERGE keeps (harness.checker.state_table)."""
        table = self._declared("TABLE") or LOG_TABLE
        if table not in TABLES:
            raise BadInput(f"sink '{self.spec}': TABLE = '{table}' is not one of {', '.join(TABLES)}")
        return table

    def _declared(self, name: str) -> str | None:
        """A module-level string constant of the code, read without importing it (no Spark on the host)."""
        for node in ast.parse(self.source.read_text()).body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                return node.value.value
        return None

    @property
    def argument(self) -> str:
        """How the driver's app runner is told the code: module:attribute."""
        return f"{self.module}:{self.attribute}"


LOG_TABLE, STATE_TABLE = "log", "state"
TABLES = (LOG_TABLE, STATE_TABLE)  # what a table sink's TABLE may say
CATALOG = "harness.catalog"
HARNESS = Path(__file__).resolve().parents[1]  # the harness package
_SHIPPED: set[str] = set()  # module names of users' files this process imported


def locate(spec: str, what: str, attribute: str = "") -> CodeSpec:
    """Where `spec` is: a file (`.py`, optionally `:attribute`) or a dotted module; BadInput if nowhere."""
    if is_file(spec):
        path_text, _, named = spec.partition(":")
        path = Path(path_text).expanduser().resolve()
        if not path.is_file():
            raise BadInput(f"{what} '{spec}': no such file {path}")
        _check_unshadowed(spec, what, path)
        _check_no_siblings(path, source_text(path, what, spec), what, spec)
        return CodeSpec(spec, path.stem, named or attribute, path, shipped=True, shipment=read_once(path, what, spec))
    module, _, named = spec.partition(":")
    if module.isidentifier() and module in catalog(what):
        module = f"{CATALOG}.{what}s.{module}"
    _project_on_path(module.split(".")[0])
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None or found.origin is None:
        raise BadInput(f"{what} '{spec}' cannot be imported (no such module; the catalog's {what}s: "
                       f"{', '.join(catalog(what))})")
    origin = Path(found.origin).resolve()
    if origin.is_relative_to(HARNESS):  # the containers have the harness package
        return CodeSpec(spec, module, named or attribute, origin, shipped=False)
    # a user's module: its top-level package goes to the driver and executors whole, so its imports work
    top = importlib.util.find_spec(module.split(".")[0])
    package = Path(top.submodule_search_locations[0]) if top and top.submodule_search_locations else None
    source_text(origin, what, spec)
    return CodeSpec(spec, module, named or attribute, origin, shipped=True, package=package,
                    shipment=read_once(package or origin, what, spec))


def _project_on_path(top: str) -> None:
    """Put the folder holding the top-level package `top` first on sys.path: the current folder, as `python -m
    harness` has it (`eo-harness`, a console script, has its bin folder there instead), or the current folder's
    src/ (a src-layout project keeps its package there, importable only once installed)."""
    for folder in (Path.cwd(), Path.cwd() / "src"):
        if (folder / top).is_dir() or (folder / f"{top}.py").is_file():
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
                importlib.invalidate_caches()
            return


def source_text(path: Path, what: str, spec: str) -> str:
    """A source file's text; BadInput naming the file when it is not UTF-8 text (Python reads it so) or
    holds a NUL byte (which no parser takes)."""
    data = path.read_bytes()
    nul = data.find(b"\0")
    if nul >= 0:
        raise BadInput(f"{what} '{spec}': {path} holds a NUL byte (offset {nul}): not a Python source")
    try:
        return data.decode()
    except UnicodeDecodeError as error:
        raise BadInput(f"{what} '{spec}': {path} is not UTF-8 text (byte {error.start}: {error.reason}); "
                       "save it as UTF-8") from None


def is_file(spec: str) -> bool:
    """`path/to/code.py` or `path/to/code.py:attribute`, as opposed to a module's name."""
    return ".py:" in spec or spec.endswith(".py")


CATALOG_MARKERS = {"sink": "def sink(", "pipeline": "def transform(", "job": "def job("}


def catalog(what: str) -> list[str]:
    """The short names of the catalog's sinks, pipelines or Flink jobs (the modules that define one)."""
    folder = Path(importlib.import_module(f"{CATALOG}.{what}s").__file__ or "").parent
    marker = CATALOG_MARKERS[what]
    return sorted(p.stem for p in folder.glob("*.py") if marker in p.read_text())


def _check_unshadowed(spec: str, what: str, path: Path) -> None:
    """A shipped file is imported by its name: one named like a module the driver has (json.py, harness.py)
    would either hide that module or be hidden by it."""
    if path.stem in _SHIPPED:  # a user's file loaded before (maybe another of the same name): no module's
        return
    try:
        found = importlib.util.find_spec(path.stem)
    except (ImportError, ValueError):
        found = None
    if found is not None and (found.origin is None or Path(found.origin).resolve() != path):
        raise BadInput(f"{what} '{spec}': its name '{path.stem}' is a module's ({found.origin or 'built in'}); "
                       "rename the file")


def _check_no_siblings(path: Path, text: str, what: str, spec: str) -> None:
    """A file is shipped alone (harness.subject.shipment): a module beside it that it imports is not on the
    driver, so it is refused here in one line rather than found by a ModuleNotFoundError in Spark's driver."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return  # said where a sink is checked, or a pipeline imported
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for top in (name.split(".")[0] for name in names):
            sibling = path.parent / f"{top}.py"
            if not sibling.is_file() and not (sibling := path.parent / top).is_dir():
                continue
            named = f":{spec.partition(':')[2]}" if ":" in spec else ""
            package = path.parent.name
            raise BadInput(f"{what} '{spec}' imports {top} ({sibling}), which a file {what} does not ship (it ships "
                           f"alone): make {path.parent} a package (add __init__.py), import {top} from it (from "
                           f"{package} import {top}) and name the {what} as its module from the folder above it "
                           f"(--{what} {package}.{path.stem}{named})")


def import_code(code: CodeSpec, what: str) -> ModuleType:
    """Import the module on the host; BadInput naming it when it does not import."""
    try:
        if not is_file(code.spec):
            return importlib.import_module(code.module)
        loaded = importlib.util.spec_from_file_location(code.module, code.source)
        assert loaded is not None and loaded.loader is not None
        module = importlib.util.module_from_spec(loaded)
        sys.modules[code.module] = module
        _SHIPPED.add(code.module)
        loaded.loader.exec_module(module)
        return module
    except Exception as error:  # noqa: BLE001 - any import failure is the user's input
        hint = ""
        if isinstance(error, ModuleNotFoundError) and (error.name or "").startswith("pyspark"):
            hint = (" (the harness imports it without Spark: import pyspark inside transform, as "
                    "docs/guides/pipelines.md shows)")
        raise BadInput(f"{what} '{code.spec}' cannot be imported: {error.__class__.__name__}: {error}{hint}") from None


def resolve_sink(spec: str) -> CodeSpec:
    """Resolve and check a sink spec; BadInput names the sink and what is wrong."""
    resolved = locate(spec, "sink", "sink")
    _check_defines(resolved)
    return resolved


def _check_defines(sink: CodeSpec) -> None:
    """The file parses and defines the sink function at top level (without importing pyspark here)."""
    try:
        tree = ast.parse(source_text(sink.source, "sink", sink.spec), filename=str(sink.source))
    except SyntaxError as error:
        raise BadInput(f"sink '{sink.spec}' does not parse: {error.msg} (line {error.lineno})") from None
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
              if isinstance(t, ast.Name)}
    if sink.attribute not in names:
        raise BadInput(f"sink '{sink.spec}' defines no '{sink.attribute}' (a sink(frame, context) function)")
