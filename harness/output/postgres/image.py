"""PostgreSQL's image: the server a postgres table (and Iceberg's REST catalog) lives in, from Debian's
packages; its Dockerfile and start script beside this module."""

from __future__ import annotations

from pathlib import Path

from harness import versions
from harness.cluster.fetch import fetch_debian_packages
from harness.cluster.image_inputs import cache_dir
from harness.cluster.images import BASE, Image


def stage(context: Path, log: Path) -> None:
    """PostgreSQL's Debian packages, the .deb files kept in the cache between builds."""
    fetch_debian_packages([versions.POSTGRES_PACKAGE], context / "debs", cache_dir() / "debs-postgres", log)


POSTGRES = Image("postgres", (versions.DEBIAN_SUITE, versions.POSTGRES_PACKAGE), stage, BASE, ("apt-get",),
                 Path(__file__).with_name("image"))
