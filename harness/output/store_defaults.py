"""What a store (harness.output.base.Store) says where it adds nothing of its own: no gate point beside the
table's commit, no container, its tables on the run's volume, every Spark line, no wheel, no server's image,
no fault class of its own. Most stores say most of these; a store inherits them and states only where it
differs, so the defaults are written once and every store's package keeps only what is its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.output.base import FaultClass, Image, Observation
    from harness.versions import Stack


class StoreDefaults:
    """The defaults of a store; the rest of harness.output.base.Store is each store's own."""

    points: tuple[str, ...] = ()  # no gate point its commits cross beside table.committed
    aliases: tuple[str, ...] = ()  # no container of its own for the harness's tunnels to reach
    stores: tuple[str, ...] = ("volume",)  # its tables live on the run's volume only

    def unsupported(self, stack: Stack) -> str | None:
        return None  # it runs on every Spark line

    def unsupported_on(self, stack: Stack, where: str) -> str | None:
        return None  # wherever it lives (`stores`), on every Spark line it runs on

    def commit_object(self, key: str) -> dict | None:
        return None  # no table on object storage, or no object whose write commits it

    def releases_on(self, stack: Stack) -> tuple[Stack, ...]:
        return (stack,)  # one release per Spark line, or none the run chooses

    def servers(self, stack: Stack, where: str) -> dict[str, tuple[str, str]]:
        return {}  # it starts none

    def wheels(self, stack: Stack) -> tuple[str, ...]:
        return ()  # a sink writes through Spark's own API, or a package every image has

    def images(self, where: str) -> tuple[Image, ...]:
        return ()  # it starts no server: every cluster's containers serve it

    def fault_classes(self, seen: Observation) -> list[FaultClass]:
        return []  # its points are every table's commit or the gate's (harness.faults.space)
