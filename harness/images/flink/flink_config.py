"""Run once while the Flink image is built: its conf/config.yaml made from the one the release ships, without
what names a host, a port, a size or a slot count. The harness gives those at every start as dynamic
properties (`jobmanager.sh start-foreground -D key=value`), so the file holds nothing of a run's. What is left
is kept as shipped: `env.java.opts.all` (the `--add-opens` list Flink needs on Java 17), the failover strategy,
the default parallelism. `taskmanager.host: localhost` goes too: unset, a TaskManager names itself by its
container's host name (notes/flink-feasibility.md).

Usage: python3 flink_config.py CONFIG_YAML (rewritten in place, its keys flattened: `a.b.c: value`).
"""

import sys

from ruamel.yaml import YAML

RUN_SPECIFIC = frozenset({
    "jobmanager.bind-host", "jobmanager.rpc.address", "jobmanager.rpc.port", "jobmanager.memory.process.size",
    "taskmanager.bind-host", "taskmanager.host", "taskmanager.numberOfTaskSlots", "taskmanager.memory.process.size",
    "rest.address", "rest.bind-address", "rest.port",
})
KEPT = "env.java.opts.all"  # must survive: without it Flink's JVMs fail on Java 17's module checks


def flattened(tree: dict, prefix: str = "") -> dict:
    """`{"a": {"b": 1}}` as `{"a.b": 1}`."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flattened(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def main(path: str) -> None:
    yaml = YAML(typ="safe")
    with open(path) as shipped:
        config = flattened(yaml.load(shipped) or {})
    kept = {key: value for key, value in config.items() if key not in RUN_SPECIFIC}
    if KEPT not in kept:
        sys.exit(f"{path}: the release's config has no {KEPT}")
    named_here = [key for key, value in kept.items() if "localhost" in str(value)]
    if named_here:
        sys.exit(f"{path}: keys still naming a host: {', '.join(named_here)}")
    yaml.default_flow_style = False
    yaml.width = 1 << 16  # the --add-opens list on one line, as shipped
    with open(path, "w") as out:
        out.write("# The release's own config.yaml without what names a host, a port, a size or a slot count:\n"
                  "# the harness gives those at every start (-D key=value). Made by flink_config.py.\n")
        yaml.dump(kept, out)


if __name__ == "__main__":
    main(sys.argv[1])
