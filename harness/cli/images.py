"""`images build`: every container image that is missing (with `--output`: those a run into that output
starts), pulled from the `registry` setting's registry where it has it, else built here
(harness.cluster.images); `images push REGISTRY`: the images of this version set pushed there, for hosts
that only run."""

from __future__ import annotations

import argparse

from harness.cluster import images
from harness.cluster.registry import checked_registry
from harness.errors import EXIT_OK
from harness.output.registry import NAMES
from harness.settings import SETTINGS


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("images", help="container images")
    images_commands = parser.add_subparsers(dest="images_command", required=True)
    build = images_commands.add_parser("build", help="pull (with --registry) or build every image that is missing")
    build.add_argument("--output", choices=NAMES, help="only the images a run into this output starts: the "
                       "cluster's, and its table's servers (PostgreSQL's for postgres); default: every image, every "
                       "installed store's servers' too")
    build.add_argument("--store", choices=SETTINGS["store"].choices, default=SETTINGS["store"].default,
                       help="with --output: where its table lives (s3: the S3 server's, and for iceberg the REST "
                       "catalog's and PostgreSQL's images too)")
    build.set_defaults(func=build_command)
    push = images_commands.add_parser("push", help="push this version set's images (their content-hash tags) to a "
                                                   "registry; credentials are the engine's (`docker login`)")
    push.add_argument("registry", metavar="REGISTRY", help="host[:port][/path], e.g. 127.0.0.1:5000/eo")
    push.set_defaults(func=push_command)


def build_command(args: argparse.Namespace) -> int:
    if args.output:
        images.build_for(args.output, args.store)
    else:
        images.build_all()
    return EXIT_OK


def push_command(args: argparse.Namespace) -> int:
    images.push_all(checked_registry(args.registry))
    return EXIT_OK
