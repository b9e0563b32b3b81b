"""The fault classes of a commit that a service behind the gate applies (PostgreSQL, an object store, a REST
catalog), in one shape for every such service: each store's own fault classes (harness.output.postgres.faults,
harness.output.object_store.faults) are drawn here in its words, and added to a table sink's space
(harness.faults.space)."""

from __future__ import annotations

from collections.abc import Callable

from harness.cluster.spark import NETWORK_TIMEOUT_S
from harness.faults.space import PARTITION_S, ROLES, FaultClass, Observation, role_suffix, who


def service_commit_classes(seen: Observation, point: str, *, server: str, commit: str, killed: str, lost: str,
                           lost_row: str, cut: str = "", held: str = "",
                           per_role: Callable[[str, str, str], list[FaultClass]] = lambda role, spec, suffix: []
                           ) -> list[FaultClass]:
    """The classes of a commit that a service behind the gate applies (PostgreSQL, an object store, a
    catalog), its second one at `point`, so that every such service's space has one shape: for each
    role that sent it, its sender killed while the gate holds it and its answer lost (`lost_row`), then
    `per_role`'s own classes for that role (role, spec suffix, name suffix); each link to `server` cut as
    it is sent; the commit held within Spark's network timeout. The words are the service's: `commit`
    names the commit, `killed` and `lost` say what a kill and a lost answer leave, `cut` and `held` end
    the partition's and the delay's. None when the baseline did not reach `point`."""
    if point not in seen.senders:
        return []
    out = []
    for role, spec, suffix in role_suffix(seen, point):
        out += [
            FaultClass("kill", "sender", point, role, "instant", f"kill-sender-{point}{suffix}",
                       (f"kill:sender@{point}#2{spec}",),
                       f"SIGKILL the process sending {commit} ({who(role)}) while the gate holds it: {killed}",
                       quick=True),
            FaultClass("drop", "sender", point, role, "instant", f"{lost_row}{suffix}",
                       (f"drop:sender@{point}#2{spec}",),
                       f"{commit} whose answer is lost ({who(role)}): {lost}", quick=True),
            *per_role(role, spec, suffix),
        ]
    for link in sorted(seen.senders[point]) or ROLES:
        out.append(FaultClass("partition", link, point, "any", f"{PARTITION_S:g}s", f"partition-{link}-{point}",
                              (f"partition:{link}@{point}#2/{PARTITION_S:g}s",),
                              f"cut the {link} link to {server} for {PARTITION_S:g} s as a commit is sent{cut}"))
    hold = round(NETWORK_TIMEOUT_S / 2)
    out.append(FaultClass("delay", "sender", point, "any", "below-network-timeout", f"delay-{point}",
                          (f"delay:sender@{point}#2/{hold}s",),
                          f"{commit} held {hold} s at the gate, then let through{held}"))
    return out
