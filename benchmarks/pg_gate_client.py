"""Round trips for benchmarks/gate.py --postgres; runs inside a container on the cluster's network.

    python pg_gate_client.py CONNINFO TABLE COUNT

COUNT autocommit INSERTs (each a commit: the gate's `pg.commit`, held by nobody) and COUNT `SELECT 1`s
(messages the gate only forwards), one at a time; prints one JSON line with the median and 99th
percentile round trip of each, in milliseconds.
"""

import json
import statistics
import sys
import time

import psycopg


def main() -> None:
    conninfo, table, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    timings: dict[str, list[float]] = {"commit": [], "select": []}
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table} (k bigint)")
        for n in range(count):
            started = time.perf_counter()
            connection.execute(f"INSERT INTO {table} VALUES (%s)", (n,))
            timings["commit"].append(time.perf_counter() - started)
            started = time.perf_counter()
            connection.execute("SELECT 1").fetchone()
            timings["select"].append(time.perf_counter() - started)
    out = {}
    for what, seconds in timings.items():
        ordered = sorted(seconds)
        out[f"{what}_median_ms"] = statistics.median(ordered) * 1000
        out[f"{what}_p99_ms"] = ordered[int(len(ordered) * 0.99) - 1] * 1000
    print(json.dumps(out))


if __name__ == "__main__":
    main()
