"""The clusters of a pytest session's tests, for harness.plugin's hooks and fixtures: whether a test starts
any, the clusters of another broker count, Spark or Iceberg release than the session's (`eo_session`) that a
test's markers ask for, each started once, every cluster's run id (named after the session, the worker and
what differs), and a cluster that cannot start made the error row of the test that asked for it.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import NoReturn

import pytest

from harness import versions
from harness.cluster.topology import Cluster
from harness.errors import HarnessError
from harness.run.session import session

CANNOT_START = pytest.StashKey[int]()  # a session's cluster that could not start: its exit status
SESSION = pytest.StashKey[str]()  # the session's id: its workers' run ids and the merged report's folder
CLUSTER_MARKERS = ("chaos", "smoke", "integration", "gate")  # tests that start clusters
CLUSTER_FIXTURES = {"eo_scenario", "eo_cluster", "eo_session"}


def cluster_run_id(config: pytest.Config, brokers: int | None = None, versions_: str | None = None) -> str | None:
    """A worker's cluster is named after the session and the worker (reports/<session>-gw0/ ...); a
    cluster of other than the session's brokers or versions after its size or versions too
    (reports/<session>-brokers3/ ..., reports/<session>-spark3.5.7/ ..., reports/<session>-iceberg1.10.1/)."""
    worker = getattr(config, "workerinput", None)
    parts = [worker["workerid"]] if worker else []
    parts += [f"brokers{brokers}"] if brokers is not None else []
    parts += [versions_] if versions_ is not None else []
    return "-".join([config.stash[SESSION], *parts]) if parts else None


def starts_clusters(item: pytest.Item) -> bool:
    """Whether the test starts a cluster (unless skipped): a marker of such tests, or a cluster fixture."""
    if item.get_closest_marker("skip") is not None:
        return False
    return (any(item.get_closest_marker(name) is not None for name in CLUSTER_MARKERS)
            or bool(CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ()))))


def cannot_start(session: pytest.Session | None, error: HarnessError) -> NoReturn:
    """A cluster that could not start: the test that asked for it is an error row saying why (in the JUnit
    file too; pytest.exit left it empty), and the session stops there with the error's exit status
    (contract_status)."""
    if session is not None:
        session.stash[CANNOT_START] = error.exit_status
        session.shouldstop = f"harness: error: {error}"
    raise pytest.fail.Exception(f"harness: error: {error}", pytrace=False) from None  # the reason alone


class OtherSizes:
    """Clusters of other broker counts or Spark or Iceberg releases than the session's, each started the first
    time a test's `brokers(n)`, `spark(line)` or `iceberg(version)` marker asks for it and removed at the
    session's end."""

    def __init__(self, config: pytest.Config, stack: ExitStack, session: pytest.Session | None = None) -> None:
        self.config, self.stack, self.session, self.clusters = config, stack, session, {}

    def of(self, brokers: int, stack: versions.Stack) -> Cluster:
        if (brokers, stack) not in self.clusters:
            session_stack = versions.stack()
            other = [f"spark{stack.spark}"] if stack.spark != session_stack.spark else []
            if stack.iceberg_asked and stack.iceberg != session_stack.iceberg:
                other.append(f"iceberg{stack.iceberg}")
            try:
                opened = self.stack.enter_context(session(
                    run_id=cluster_run_id(self.config, brokers, "-".join(other) or None), brokers=brokers,
                    spark=stack.spark, iceberg=stack.iceberg_asked or None))
            except HarnessError as error:
                cannot_start(self.session, error)
            self.clusters[brokers, stack] = opened.cluster
        return self.clusters[brokers, stack]
