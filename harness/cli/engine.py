"""`engine start|stop`: another Docker engine on this machine, for spreading a matrix (--docker-hosts), or
one isolated as if on another machine (--isolated: reachable only over TCP with TLS, host paths unseen)."""

from __future__ import annotations

import argparse
import shlex

from harness.cluster import engines, isolated_engine
from harness.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("engine", help="another Docker engine on this machine (for --docker-hosts)")
    engine_commands = parser.add_subparsers(dest="engine_command", required=True)
    start = engine_commands.add_parser(
        "start", help="start engine NAME; print its DOCKER_HOST (--isolated: an `export` line of its DOCKER_HOST, "
                      "DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, for `eval`)")
    start.add_argument("name")
    start.add_argument("--pool", type=int, default=1, help="its address pool, 10.20<N>.0.0/16 (one per engine)")
    start.add_argument("--isolated", action="store_true",
                       help="in its own network and mount namespaces, reachable only at tcp://10.210.<pool>.2:2376 "
                            "with TLS (as an engine in a VM or on another machine)")
    stop = engine_commands.add_parser("stop", help="stop engine NAME")
    stop.add_argument("name")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    if args.engine_command == "start" and args.isolated:
        environment = isolated_engine.start(args.name, args.pool)
        print("export " + " ".join(f"{key}={shlex.quote(value)}" for key, value in environment.items()))
    elif args.engine_command == "start":
        print(engines.start(args.name, args.pool))
    elif not isolated_engine.stop(args.name):
        engines.stop(args.name)
    return EXIT_OK
