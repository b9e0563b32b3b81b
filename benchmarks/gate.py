"""Throughput and per-request latency through the gate plus toxiproxy against the broker's own listener,
in one run; with `--postgres N`, PostgreSQL's round trips through them against the server's own port too.

    python benchmarks/gate.py [--megabytes 300] [--rate 50] [--repeats 3] [--requests 200] [--postgres 0]

A client container on the cluster's network produces then consumes the same volume, then sends produce
requests one at a time, alternating between the direct route (the broker's internal listener) and the
chaos route (gate, toxiproxy). Prints the median MB/s of each route and the ratio (goal: the chaos route
keeps >= 80% at 50 MB/s), and the median round trip of a request on each route and what the chaos route
adds (goal: below 2 ms). With `--postgres N` the container also makes N autocommit INSERTs (each a
`pg.commit` the gate reads) and N `SELECT 1`s on each route (benchmarks/pg_gate_client.py) and prints
their median and 99th percentile round trips.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

from docs_page import record, section

from harness.client.topics import create_topics, unique_name
from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.output.postgres.server import PORT, attached
from harness.run.session import session

CLIENT = Path(__file__).with_name("gate_client.py")


def measure(cluster: Cluster, bootstrap: str, megabytes: float, rate: float, requests: int) -> dict[str, float]:
    topic = unique_name("gatebench", "t")
    create_topics(cluster.kafka.admin(), [topic], 4)
    driver = cluster.new_driver("gatebench", [])
    driver.with_command(["sleep", "infinity"])
    driver.waiting_for(None)  # type: ignore[arg-type]
    driver.start()
    try:
        # the client's source as the command: only the harness package is mounted in the container
        result = driver.exec(["python", "-c", CLIENT.read_text(), bootstrap, topic, str(megabytes), str(rate),
                              str(requests)])
        output = result.output.decode().strip().splitlines()
        return json.loads(output[-1])
    finally:
        cluster.remove_driver(driver)


def postgres_round_trips(cluster: Cluster, count: int) -> dict[str, dict[str, float]]:
    """Median and p99 round trips of `count` commits and selects, straight to PostgreSQL and through the gate."""
    server = attached(cluster).server
    sinks = attached(cluster).for_sinks()
    direct = sinks.conninfo().replace(f"host={sinks.host} port={sinks.port}", f"host={server.alias} port={PORT}")
    script = Path(__file__).with_name("pg_gate_client.py").read_text()
    driver = cluster.new_driver("gatebench-pg", [])
    driver.with_command(["sleep", "infinity"])
    driver.waiting_for(None)  # type: ignore[arg-type]
    driver.start()
    try:
        out = {}
        for route, conninfo in (("direct", direct), ("gate", sinks.conninfo())):
            result = driver.exec(["python", "-c", script, conninfo, f"bench_{route}", str(count)])
            out[route] = json.loads(result.output.decode().strip().splitlines()[-1])
        return out
    finally:
        cluster.remove_driver(driver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=float, default=300)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--postgres", type=int, default=0, metavar="N", help="PostgreSQL round trips per route")
    args = parser.parse_args()
    trips = None
    routes = {"direct": [], "gate": []}
    with session(workers=0) as opened:
        cluster = opened.cluster
        bootstraps = {"direct": f"{cluster.kafka.brokers[0].alias}:9091", "gate": cluster.kafka.bootstrap_chaos}
        for _ in range(args.repeats):
            for route, bootstrap in bootstraps.items():
                routes[route].append(measure(cluster, bootstrap, args.megabytes, args.rate, args.requests))
        if args.postgres:
            trips = postgres_round_trips(cluster, args.postgres)
    print(f"{args.megabytes:g} MB of 1 KiB records at up to {args.rate:g} MB/s, median of {args.repeats}")
    table = []
    for kind in ("produce_mb_s", "consume_mb_s"):
        direct = statistics.median(r[kind] for r in routes["direct"])
        gate = statistics.median(r[kind] for r in routes["gate"])
        print(f"{kind.split('_')[0]:<8} direct {direct:6.1f} MB/s   gate+toxiproxy {gate:6.1f} MB/s   "
              f"ratio {gate / direct:.2f} (goal >= 0.80)")
        table.append((kind.split("_")[0], f"{direct:.1f} MB/s", f"{gate:.1f} MB/s", f"ratio {gate / direct:.2f}",
                      ">= 0.80"))
    direct, gate = (statistics.median(r["request_ms"] for r in routes[route]) for route in ("direct", "gate"))
    print(f"request  direct {direct:6.2f} ms     gate+toxiproxy {gate:6.2f} ms     added {gate - direct:.2f} ms "
          f"(median of {args.requests} requests a run; goal < 2 ms)")
    table.append(("a request's round trip", f"{direct:.2f} ms", f"{gate:.2f} ms", f"added {gate - direct:.2f} ms",
                  "< 2 ms"))
    command = (f"python benchmarks/gate.py --megabytes {args.megabytes:g} --rate {args.rate:g} --repeats "
               f"{args.repeats} --requests {args.requests}")
    load = ", ".join(f"{average:.1f}" for average in os.getloadavg())
    record("gate", "The gate's cost", "What the chaos route (the gate, then toxiproxy) costs the system under "
           "test against the broker's own listener, from `benchmarks/gate.py`: throughput, and the round trip of "
           "one produce request awaited alone (medians).",
           section(command, ("what", "direct", "gate + toxiproxy", "cost", "goal"), table,
                   f"The machine's load average at the end (1, 5, 15 min): {load}."))
    if trips:
        print(f"PostgreSQL, {args.postgres} round trips of each, one at a time (median / p99 ms)")
        for what in ("commit", "select"):
            direct, gate = trips["direct"], trips["gate"]
            print(f"{what:<8} direct {direct[f'{what}_median_ms']:.2f} / {direct[f'{what}_p99_ms']:.2f}   "
                  f"gate+toxiproxy {gate[f'{what}_median_ms']:.2f} / {gate[f'{what}_p99_ms']:.2f}")


if __name__ == "__main__":
    run_script(main)
