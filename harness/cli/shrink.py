"""`shrink`: a failing scenario's report folder in; replays smaller versions of it and writes the smallest
that still fails the same way twice as a pytest reproducer (`test_repro_<hash>.py`). Exit 1: shrunk, the
reproducer written; 5: flaky, the failure did not come back twice in a row (no reproducer)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.checker.judge import EXIT_STATUS
from harness.checker.verdict import FAIL
from harness.cli.options import add_setting
from harness.errors import EXIT_FLAKY, BadInput
from harness.evidence import write_evidence
from harness.explore.shrink import Replay, anomaly_kinds, reproducer, shrink
from harness.run.session import scenario, session


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("shrink", help="replay a failing scenario smaller; write a pytest reproducer "
                                 "(exit 1 shrunk, 5 flaky)")
    parser.add_argument("report", type=Path, metavar="REPORT_FOLDER", help="a failing scenario's report folder")
    parser.add_argument("--out", type=Path, default=Path("."), help="where the reproducer goes (default: here)")
    add_setting(parser, "stall_timeout", metavar="S")
    parser.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    original = Replay.from_report(args.report)
    result = args.report / "result.json"
    kinds = anomaly_kinds(json.loads(result.read_text())) if result.is_file() else frozenset()
    if not kinds:
        raise BadInput(f"{args.report} did not fail with anomalies: there is nothing to shrink")
    print(f"shrinking {', '.join(sorted(kinds))} of {original.describe()}")
    with session(brokers=original.brokers, spark=original.spark, iceberg=original.iceberg, output=original.output,
                 store=original.store) as opened:
        found = shrink(original, kinds, lambda replay, name: scenario(
            opened.cluster, name, stall_timeout=args.stall_timeout, **replay.options()).run())  # type: ignore[arg-type]
    print("\ntried:")
    for what, outcomes in found.tried:
        print(f"  {what}: {'; '.join(outcomes)}")
    if found.status != "shrunk":
        print(f"flaky: the original failed with {', '.join(sorted(kinds))}, and its replays did not fail so twice "
              f"in a row; the histories: {', '.join([str(args.report), *found.replays])}")
        return EXIT_FLAKY
    assert found.smallest is not None
    name, text = reproducer(found, args.report)
    write_evidence(args.out / name, text)
    print(f"before: {original.describe()}\nafter:  {found.smallest.describe()}\nreproducer: {args.out / name}")
    return EXIT_STATUS[FAIL]
