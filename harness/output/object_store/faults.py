"""The fault classes of a table's commits over HTTP (`--store s3`): `s3.put`, the PUT of a commit object,
and `catalog.commit`, an Iceberg REST commit (harness.gate.http_proxy), added to a table sink's space
(harness.faults.space) where its baseline crossed them."""

from __future__ import annotations

from harness.cluster.spark import NETWORK_TIMEOUT_S
from harness.faults.space import PARTITION_S, ROLES, FaultClass, Observation, role_suffix, who

POINTS = {"s3.put": "the S3 server", "catalog.commit": "the REST catalog"}


def fault_classes(seen: Observation) -> list[FaultClass]:
    """Each HTTP commit point the baseline's sink reached (its second commit: the first may be a create):
    its sender killed while the gate holds it, its answer lost or a 503 in its place once the server
    applied it (the lost commit response), its role's link cut, the commit held."""
    out = []
    for point, server in POINTS.items():
        if point not in seen.senders:
            continue
        for role, spec, suffix in role_suffix(seen, point):
            out += [
                FaultClass("kill", "sender", point, role, "instant", f"kill-sender-{point}{suffix}",
                           (f"kill:sender@{point}#2{spec}",),
                           f"SIGKILL the process sending a commit to {server} ({who(role)}) while the gate holds "
                           "it: the server never sees it, and the batch runs again", quick=True),
                FaultClass("drop", "sender", point, role, "instant", f"lost-{point}-response{suffix}",
                           (f"drop:sender@{point}#2{spec}",),
                           f"a commit to {server} whose answer is lost ({who(role)}): applied, the connection "
                           "closed in place of its answer", quick=True),
                FaultClass("fail", "sender", point, role, "instant", f"failed-{point}-503{suffix}",
                           (f"fail:sender@{point}#2{spec}/503",),
                           f"a commit to {server} applied, then answered 503 in its place ({who(role)}), as a "
                           "proxy in front of it may answer: cleaning up after it destroys the table"),
            ]
        for link in sorted(seen.senders[point]) or ROLES:
            out.append(FaultClass("partition", link, point, "any", f"{PARTITION_S:g}s", f"partition-{link}-{point}",
                                  (f"partition:{link}@{point}#2/{PARTITION_S:g}s",),
                                  f"cut the {link} link to {server} for {PARTITION_S:g} s as a commit is sent"))
        held = round(NETWORK_TIMEOUT_S / 2)
        out.append(FaultClass("delay", "sender", point, "any", "below-network-timeout", f"delay-{point}",
                              (f"delay:sender@{point}#2/{held}s",),
                              f"a commit to {server} held {held} s at the gate, then let through"))
    return out
