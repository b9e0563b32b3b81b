"""Sink specs as users write them: a dotted module (`fixtures.sinks.transactional`) or a file outside the
repository (`path/to/my_sink.py:sink`). Resolved and checked on the host before anything starts."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput


@dataclass(frozen=True)
class SinkSpec:
    """A resolved sink: what the driver imports, the file it comes from, and whether it must be shipped."""

    spec: str
    module: str
    attribute: str
    source: Path
    shipped: bool  # a file outside the repository: copied next to the checkpoints, added with addPyFile

    @property
    def source_sha256(self) -> str:
        return hashlib.sha256(self.source.read_bytes()).hexdigest()

    @property
    def argument(self) -> str:
        """How the driver's app runner is told the sink: module:attribute."""
        return f"{self.module}:{self.attribute}"


def resolve_sink(spec: str) -> SinkSpec:
    """Resolve and check a sink spec; BadInput names the sink and what is wrong."""
    if ".py:" in spec or spec.endswith(".py"):
        path_text, _, attribute = spec.partition(":")
        path = Path(path_text).expanduser().resolve()
        if not path.is_file():
            raise BadInput(f"sink '{spec}': no such file {path}")
        resolved = SinkSpec(spec, path.stem, attribute or "sink", path, shipped=True)
    else:
        module, _, attribute = spec.partition(":")
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None or found.origin is None:
            raise BadInput(f"sink '{spec}' cannot be imported (no such module)")
        resolved = SinkSpec(spec, module, attribute or "sink", Path(found.origin), shipped=False)
    _check_defines(resolved)
    return resolved


def _check_defines(sink: SinkSpec) -> None:
    """The file parses and defines the sink function at top level (without importing pyspark here)."""
    try:
        tree = ast.parse(sink.source.read_text(), filename=str(sink.source))
    except SyntaxError as error:
        raise BadInput(f"sink '{sink.spec}' does not parse: {error.msg} (line {error.lineno})") from None
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    names |= {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
              if isinstance(t, ast.Name)}
    if sink.attribute not in names:
        raise BadInput(f"sink '{sink.spec}' defines no '{sink.attribute}' (a sink(frame, context) function)")
