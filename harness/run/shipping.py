"""What ships with a scenario's driver besides its arguments: code from outside the harness, copied beside
the checkpoint, and what ships with the sink (harness.subject.bundle): its dependencies installed on the
cluster, its Spark settings checked against the output's own."""

from __future__ import annotations

from harness.cluster.spark import Submit
from harness.cluster.topology import Cluster
from harness.gate.relay_files import RelayFiles
from harness.output.base import Output
from harness.subject.bundle import Bundle
from harness.subject.code_spec import CodeSpec
from harness.subject.dependencies import check_not_owned


def shipped(bundle: Bundle | None) -> dict:
    """What shipped with the sink as the history records it: resolved, and as asked (what a replay gives)."""
    if bundle is None:
        return {}
    return {"dependencies": bundle.to_dict(), "dependencies_asked": bundle.asked.to_dict()}


def submit(cluster: Cluster, bundle: Bundle | None, output: Output) -> Submit:
    """The sink's dependencies installed on the cluster, and its settings, checked against the output's
    own (a table's catalog and extensions are the harness's)."""
    if bundle is None:
        return Submit()
    for key, _ in bundle.conf:
        check_not_owned(key, output.spark_settings(), output.name)
    if not bundle.files:
        return Submit(conf=bundle.conf)
    return Submit(cluster.install_dependencies(bundle.digest, *bundle.paths()), bundle.conf)


def ship(code: CodeSpec, files: RelayFiles, checkpoint: str) -> str:
    """Copy code from outside the harness next to the checkpoint, through the relay (the driver sees it
    there): the bytes read when the code was resolved (a file as it is, a package zipped)."""
    assert code.shipment is not None, "shipped code is read when it is resolved"
    path = f"{checkpoint}-code/{code.shipment.name}"
    files.write(path, code.shipment.data)
    return path
