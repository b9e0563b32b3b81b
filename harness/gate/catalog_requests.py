"""What an Iceberg REST catalog request means, for the gate: its route (the table or namespace its path
names), its kind for the history, and the point `catalog.commit`, a commit of one table or of a transaction
over several (the pointer swap), detailed from its JSON body; and the catalog's error answer, which the gate
gives in the server's place. Other requests are named by kind for the history only. The bytes are read by
harness.gate.http_framing.
"""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl, unquote, urlsplit

from harness.gate.http_framing import ProtocolError, Request, answer, retry_after_header
from harness.gate.http_points import Named

CATALOG_COMMIT = "catalog.commit"

# An Iceberg REST catalog's routes after `/v1/` and its optional prefix, by method and path shape (`{ns}` a
# namespace, `{t}` a table or view's name): the kind each is named by.
_CATALOG_ROUTES: dict[tuple[str, tuple[str, ...]], str] = {
    ("GET", ("namespaces",)): "catalog.list_namespaces",
    ("POST", ("namespaces",)): "catalog.create_namespace",
    ("GET", ("namespaces", "{ns}")): "catalog.load_namespace",
    ("HEAD", ("namespaces", "{ns}")): "catalog.namespace_exists",
    ("DELETE", ("namespaces", "{ns}")): "catalog.drop_namespace",
    ("POST", ("namespaces", "{ns}", "properties")): "catalog.update_namespace",
    ("GET", ("namespaces", "{ns}", "tables")): "catalog.list_tables",
    ("POST", ("namespaces", "{ns}", "tables")): "catalog.create_table",
    ("POST", ("namespaces", "{ns}", "register")): "catalog.register_table",
    ("GET", ("namespaces", "{ns}", "tables", "{t}")): "catalog.load_table",
    ("HEAD", ("namespaces", "{ns}", "tables", "{t}")): "catalog.table_exists",
    ("DELETE", ("namespaces", "{ns}", "tables", "{t}")): "catalog.drop_table",
    ("POST", ("namespaces", "{ns}", "tables", "{t}")): CATALOG_COMMIT,
    ("GET", ("namespaces", "{ns}", "tables", "{t}", "credentials")): "catalog.load_credentials",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "metrics")): "catalog.report_metrics",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "plan")): "catalog.plan",
    ("GET", ("namespaces", "{ns}", "tables", "{t}", "plan", "{id}")): "catalog.plan_result",
    ("DELETE", ("namespaces", "{ns}", "tables", "{t}", "plan", "{id}")): "catalog.cancel_plan",
    ("POST", ("namespaces", "{ns}", "tables", "{t}", "tasks")): "catalog.plan_tasks",
    ("POST", ("tables", "rename")): "catalog.rename_table",
    ("POST", ("transactions", "commit")): CATALOG_COMMIT,
    ("GET", ("namespaces", "{ns}", "views")): "catalog.list_views",
    ("POST", ("namespaces", "{ns}", "views")): "catalog.create_view",
    ("GET", ("namespaces", "{ns}", "views", "{t}")): "catalog.load_view",
    ("HEAD", ("namespaces", "{ns}", "views", "{t}")): "catalog.view_exists",
    ("POST", ("namespaces", "{ns}", "views", "{t}")): "catalog.replace_view",
    ("DELETE", ("namespaces", "{ns}", "views", "{t}")): "catalog.drop_view",
    ("POST", ("views", "rename")): "catalog.rename_view",
    ("POST", ("namespaces", "{ns}", "register-view")): "catalog.register_view",
}
# A multi-level namespace's parts in one path segment: `%1F` unless the config endpoint's answer overrides
# `namespace-separator` (RESTCatalogServer, Iceberg's test server, says `%2E`).
NAMESPACE_SEPARATOR = "%1F"


def _catalog_route(method: str, segments: list[str], separator: str) -> tuple[str, dict] | None:
    for (route_method, shape), kind in _CATALOG_ROUTES.items():
        if route_method != method or len(shape) != len(segments):
            continue
        found: dict = {}
        for want, segment in zip(shape, segments, strict=True):
            if want == "{ns}":
                found["namespace"] = [unquote(part) for part in re.split(re.escape(separator), segment, flags=re.I)]
            elif want == "{id}":
                found["plan"] = unquote(segment)
            elif want == "{t}":
                found["name"] = unquote(segment)
            elif want != segment:
                break
        else:
            return kind, found
    return None


def catalog_route(request: Request, separator: str = NAMESPACE_SEPARATOR) -> Named:
    """A catalog request's kind and the table or namespace its path names, without its body. The prefix
    (`/v1/{prefix}/...`, from the config endpoint's answer) is optional: a path is read without one first."""
    split = urlsplit(request.target)
    segments = split.path.strip("/").split("/")
    if segments[:1] != ["v1"]:
        return Named(f"catalog.{request.method.lower()}", None, {"path": split.path})
    segments = segments[1:]
    if segments == ["config"]:
        return Named("catalog.config", None, dict(parse_qsl(split.query)))
    if segments == ["oauth", "tokens"]:
        return Named("catalog.oauth_tokens")
    for prefix, rest in ((None, segments), (unquote(segments[0]) if segments else None, segments[1:])):
        route = _catalog_route(request.method, rest, separator)
        if route is not None:
            kind, found = route
            details = {**({"prefix": prefix} if prefix is not None else {}), **found}
            return Named(kind, kind if kind == CATALOG_COMMIT else None, details)
    return Named(f"catalog.{request.method.lower()}", None, {"path": split.path})


def wants_body(request: Request) -> bool:
    """The gate reads this request's body before it forwards it: a catalog commit's, which says what it
    commits."""
    return catalog_route(request).point == CATALOG_COMMIT


def name_catalog(request: Request, body: bytes | None = None, separator: str = NAMESPACE_SEPARATOR) -> Named:
    """A catalog request's kind; a commit's details from its JSON body (when given): per table, the snapshots
    it adds, the refs it sets and the `assert-ref-snapshot-id` it requires."""
    named = catalog_route(request, separator)
    if named.point != CATALOG_COMMIT or body is None:
        return named
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"a catalog commit's body is not JSON: {e}") from None
    if not isinstance(document, dict):
        raise ProtocolError("a catalog commit's body is not a JSON object")
    if "table-changes" in document:  # POST transactions/commit
        changes = document["table-changes"]
        if not isinstance(changes, list):
            raise ProtocolError("a transaction's `table-changes` is not a list")
        tables = [_table_change(change, None) for change in changes]
    else:
        tables = [_table_change(document, {"namespace": named.details["namespace"], "name": named.details["name"]})]
    return Named(named.kind, named.point, {**named.details, "tables": tables})


def _table_change(change: object, identifier: dict | None) -> dict:
    """One table's commit: its identifier (the path's, or the body's in a transaction), the snapshot ids its
    updates add, the refs they set, and the ref snapshot ids its requirements assert."""
    if not isinstance(change, dict):
        raise ProtocolError("a table's commit is not a JSON object")
    updates, requirements = change.get("updates", []), change.get("requirements", [])
    if not isinstance(updates, list) or not isinstance(requirements, list):
        raise ProtocolError("a table commit's `updates` or `requirements` is not a list")
    updates = [u for u in updates if isinstance(u, dict)]
    requirements = [r for r in requirements if isinstance(r, dict)]
    body_identifier = change.get("identifier")
    if identifier is None and isinstance(body_identifier, dict):
        identifier = {"namespace": body_identifier.get("namespace"), "name": body_identifier.get("name")}
    return {
        "table": identifier,
        "adds_snapshots": [u["snapshot"].get("snapshot-id") for u in updates
                           if u.get("action") == "add-snapshot" and isinstance(u.get("snapshot"), dict)],
        "sets_refs": {u.get("ref-name"): u.get("snapshot-id") for u in updates
                      if u.get("action") == "set-snapshot-ref"},
        "asserts_refs": {r.get("ref"): r.get("snapshot-id") for r in requirements
                         if r.get("type") == "assert-ref-snapshot-id"},
        "creates": any(r.get("type") == "assert-create" for r in requirements),
    }


# The Iceberg REST spec's error types by status, as its examples give them for a table commit's answers:
# 500, 502 and 504 leave the commit's outcome unknown to the client, 409 says it failed.
CATALOG_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
                 404: "NoSuchTableException", 409: "CommitFailedException", 419: "AuthenticationTimeoutException",
                 500: "CommitStateUnknownException", 502: "CommitStateUnknownException",
                 503: "SlowDownException", 504: "CommitStateUnknownException"}


def catalog_error(request: Request, status: int, message: str, type: str | None = None,
                  retry_after: int | None = None) -> bytes:
    """An Iceberg REST catalog's answer to `request` with `status`: its ErrorModel JSON (the type the spec
    gives that status unless `type` is given)."""
    type = type or CATALOG_TYPES.get(status)
    if type is None:
        raise ValueError(f"no Iceberg REST error type for status {status}: give one")
    body = json.dumps({"error": {"message": message, "type": type, "code": status}}).encode()
    return answer(request, status, "application/json", body, retry_after_header(retry_after))

