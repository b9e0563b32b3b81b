"""`engine start|stop`: another Docker engine on this machine, for spreading a matrix (--docker-hosts), or
one isolated as if on another machine (--isolated: reachable only over TCP, host paths unseen)."""

from __future__ import annotations

import argparse

from harness.cluster import engines, isolated_engine
from harness.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("engine", help="another Docker engine on this machine (for --docker-hosts)")
    engine_commands = parser.add_subparsers(dest="engine_command", required=True)
    start = engine_commands.add_parser("start", help="start engine NAME; print its DOCKER_HOST")
    start.add_argument("name")
    start.add_argument("--pool", type=int, default=1, help="its address pool, 10.20<N>.0.0/16 (one per engine)")
    start.add_argument("--isolated", action="store_true",
                       help="in its own network and mount namespaces, reachable only at tcp://10.210.<pool>.2:2375 "
                            "(as an engine in a VM or on another machine)")
    stop = engine_commands.add_parser("stop", help="stop engine NAME")
    stop.add_argument("name")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.engine_command == "start":
        print(isolated_engine.start(args.name, args.pool) if args.isolated else engines.start(args.name, args.pool))
    elif not isolated_engine.stop(args.name):
        engines.stop(args.name)
    return EXIT_OK
