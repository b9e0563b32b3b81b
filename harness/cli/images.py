"""`images build`: build every container image that is missing (nothing is pulled: see harness.cluster.images)."""

from __future__ import annotations

import argparse

from harness.cluster import images
from harness.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("images", help="container images")
    images_commands = parser.add_subparsers(dest="images_command", required=True)
    build = images_commands.add_parser("build", help="build every image that is missing")
    build.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    images.build_all()
    return EXIT_OK
