"""The fault classes of a table's commits over HTTP (`--store s3`): `s3.put`, the PUT of a commit object,
and `catalog.commit`, an Iceberg REST commit (harness.gate.http_proxy), added to a table sink's space
(harness.faults.space) where its baseline crossed them."""

from __future__ import annotations

from functools import partial

from harness.faults.service_commits import service_commit_classes
from harness.faults.space import FaultClass, Observation, who

POINTS = {"s3.put": "the S3 server", "catalog.commit": "the REST catalog"}


def fault_classes(seen: Observation) -> list[FaultClass]:
    """Each HTTP commit point the baseline's sink reached (its second commit: the first may be a create):
    its sender killed while the gate holds it, its answer lost or a 503 in its place once the server
    applied it (the lost commit response), its role's link cut, the commit held."""
    out = []
    for point, server in POINTS.items():
        out += service_commit_classes(
            seen, point, server=server, commit=f"a commit to {server}", lost_row=f"lost-{point}-response",
            killed="the server never sees it, and the batch runs again",
            lost="applied, the connection closed in place of its answer", per_role=partial(_failed, point, server))
    return out


def _failed(point: str, server: str, role: str, spec: str, suffix: str) -> list[FaultClass]:
    """An applied commit answered 503: HTTP's own way to lose a commit's answer, beside the dropped one."""
    return [FaultClass("fail", "sender", point, role, "instant", f"failed-{point}-503{suffix}",
                       (f"fail:sender@{point}#2{spec}/503",),
                       f"a commit to {server} applied, then answered 503 in its place ({who(role)}), as a "
                       "proxy in front of it may answer: cleaning up after it destroys the table")]
