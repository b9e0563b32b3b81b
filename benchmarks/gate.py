"""Throughput through the gate plus toxiproxy against the broker's own listener, in one run.

    python benchmarks/gate.py [--megabytes 300] [--rate 50] [--repeats 3]

A client container on the cluster's network produces then consumes the same volume, alternating
between the direct route (the broker's internal listener) and the chaos route (gate, toxiproxy).
Prints the median MB/s of each route and the ratio (goal: the chaos route keeps >= 80% at 50 MB/s).
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tarfile
from pathlib import Path

from harness.client.topics import create_topics, unique_name
from harness.cluster.topology import Cluster
from harness.interrupt import run_script
from harness.run.session import session


def measure(cluster: Cluster, bootstrap: str, megabytes: float, rate: float) -> dict[str, float]:
    topic = unique_name("gatebench", "t")
    create_topics(cluster.kafka.admin(), [topic], 4)
    driver = cluster.new_driver("gatebench", [])
    driver.with_command(["sleep", "infinity"])
    driver.waiting_for(None)  # type: ignore[arg-type]
    driver.start()
    try:
        client = Path(__file__).with_name("gate_client.py")  # not in the package volume: copied in
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            tar.add(client, arcname=client.name)
        driver.get_wrapped_container().put_archive("/tmp", archive.getvalue())
        result = driver.exec(["python", f"/tmp/{client.name}", bootstrap, topic, str(megabytes), str(rate)])
        output = result.output.decode().strip().splitlines()
        return json.loads(output[-1])
    finally:
        cluster.remove_driver(driver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=float, default=300)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    routes = {"direct": [], "gate": []}
    with session(workers=0) as opened:
        cluster = opened.cluster
        bootstraps = {"direct": f"{cluster.kafka.brokers[0].alias}:9091", "gate": cluster.kafka.bootstrap_chaos}
        for _ in range(args.repeats):
            for route, bootstrap in bootstraps.items():
                routes[route].append(measure(cluster, bootstrap, args.megabytes, args.rate))
    print(f"{args.megabytes:g} MB of 1 KiB records at up to {args.rate:g} MB/s, median of {args.repeats}")
    for kind in ("produce_mb_s", "consume_mb_s"):
        direct = statistics.median(r[kind] for r in routes["direct"])
        gate = statistics.median(r[kind] for r in routes["gate"])
        print(f"{kind.split('_')[0]:<8} direct {direct:6.1f} MB/s   gate+toxiproxy {gate:6.1f} MB/s   "
              f"ratio {gate / direct:.2f} (goal >= 0.80)")


if __name__ == "__main__":
    run_script(main)
