"""The plugin's `brokers(n)` marker: a test that asks for another broker count than the session's gets a
cluster of its own size, started once and named after it (Kafka's session faked: the real one runs in
the chaos suite's reproducers)."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from types import SimpleNamespace

import pytest

from harness import plugin_clusters, versions

pytestmark = pytest.mark.unit
SPARK, OTHER_SPARK = versions.stack().spark, next(s for s in versions.SPARK_VERSIONS if s != versions.stack().spark)


def test_a_cluster_of_another_size_is_started_once_and_named_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[tuple[str | None, int]] = []

    @contextmanager
    def fake_session(run_id: str | None = None, brokers: int | None = None, spark: str | None = None,
                     iceberg: str | None = None):
        opened.append((run_id, brokers))
        yield SimpleNamespace(cluster=f"cluster of {brokers}")

    monkeypatch.setattr(plugin_clusters, "session", fake_session)
    config = SimpleNamespace(stash={plugin_clusters.SESSION: "20261125-1"})
    with ExitStack() as stack:
        sizes = plugin_clusters.OtherSizes(config, stack)  # type: ignore[arg-type]
        assert sizes.of(3, versions.stack()) == sizes.of(3, versions.stack()) == "cluster of 3"
        assert sizes.of(5, versions.stack()) == "cluster of 5"
        assert sizes.of(1, versions.stack(OTHER_SPARK)) == "cluster of 1"
        assert sizes.of(1, versions.stack(iceberg="1.10.1")) == "cluster of 1"
    assert opened == [("20261125-1-brokers3", 3), ("20261125-1-brokers5", 5),
                      (f"20261125-1-brokers1-spark{OTHER_SPARK}", 1), ("20261125-1-brokers1-iceberg1.10.1", 1)]
    worker = SimpleNamespace(stash=config.stash, workerinput={"workerid": "gw1"})
    assert plugin_clusters.cluster_run_id(worker, 3) == "20261125-1-gw1-brokers3"  # type: ignore[arg-type]
    assert plugin_clusters.cluster_run_id(worker) == "20261125-1-gw1"  # type: ignore[arg-type]
    assert plugin_clusters.cluster_run_id(config) is None  # type: ignore[arg-type]  # the session's own: a new id
