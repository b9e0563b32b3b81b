"""The S3 server's image (versitygw, built by Go from its module), for tables on object storage; its
Dockerfile beside this module."""

from __future__ import annotations

from pathlib import Path

from harness import versions
from harness.cluster.fetch import fetch_go_binary
from harness.cluster.images import BASE, Image


def stage(context: Path, log: Path) -> None:
    """The server's binary, built by Go from its module."""
    fetch_go_binary(versions.VERSITYGW_MODULE, versions.VERSITYGW, "cmd/versitygw", context / "versitygw", log)


VERSITYGW = Image("versitygw", (versions.VERSITYGW_MODULE, versions.VERSITYGW), stage, BASE, ("go",),
                  Path(__file__).with_name("image"))
