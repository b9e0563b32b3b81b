"""`engine start|stop`: another Docker engine on this machine, for spreading a matrix (--docker-hosts)."""

from __future__ import annotations

import argparse

from harness.cluster import engines
from harness.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("engine", help="another Docker engine on this machine (for --docker-hosts)")
    engine_commands = parser.add_subparsers(dest="engine_command", required=True)
    start = engine_commands.add_parser("start", help="start engine NAME; print its DOCKER_HOST")
    start.add_argument("name")
    start.add_argument("--pool", type=int, default=1, help="its address pool, 10.20<N>.0.0/16 (one per engine)")
    stop = engine_commands.add_parser("stop", help="stop engine NAME")
    stop.add_argument("name")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.engine_command == "start":
        print(engines.start(args.name, args.pool))
    else:
        engines.stop(args.name)
    return EXIT_OK
