"""The broker's own log of a topic, through Kafka's DumpLogSegments tool run in the broker's container.

What a consumer cannot see, the log holds: which producer (id and epoch) wrote each batch, whether it
was transactional, and the COMMIT and ABORT markers that ended each transaction, with their times. That
is what explains an anomaly: which transaction wrote each copy of a duplicate, and what became of a
lost record's write.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.cluster.service import Service

LOG_DIR = "/var/lib/kafka"  # log.dirs of the harness's broker image
TOOL = ["java", "-cp", "/opt/kafka/libs/*", "kafka.tools.DumpLogSegments"]
KEEP = "grep -E '^baseOffset|endTxnMarker|^TOOL-EXIT'"  # without payloads: a line a batch, not one a record
BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?producerId: (-?\d+) producerEpoch: (-?\d+) .*?"
                   r"isTransactional: (\w+) isControl: (\w+) .*?CreateTime: (-?\d+)")
RECORD = re.compile(r"^\| offset: (\d+) .*?(?:endTxnMarker: (\w+)|payload: (.*)$)")


@dataclass
class Batch:
    """One record batch of a partition's log: its offsets, its producer, and for a control batch its marker."""

    partition: int
    base: int
    last: int
    producer_id: int
    epoch: int
    transactional: bool
    control: bool
    create_ms: int
    marker: str | None = None  # COMMIT or ABORT, for a control batch
    payloads: dict[int, str] = field(default_factory=dict)  # offset -> value as the tool prints it


def parse(text: str, partition: int) -> list[Batch]:
    """Batches in log order from the tool's output for one partition (`--print-data-log`)."""
    batches: list[Batch] = []
    for line in text.splitlines():
        if match := BATCH.match(line):
            base, last, pid, epoch, transactional, control, created = match.groups()
            batches.append(Batch(partition, int(base), int(last), int(pid), int(epoch), transactional == "true",
                                 control == "true", int(created)))
        elif batches and (match := RECORD.match(line)):
            offset, marker, payload = match.groups()
            if marker is not None:
                batches[-1].marker = marker
            elif payload is not None:
                batches[-1].payloads[int(offset)] = payload
    return batches


def dump_topic(replica: Callable[[int], Service], topic: str, partitions: list[int],
               payloads: bool = False) -> dict[int, list[Batch]]:
    """Every batch of each partition of `topic`, read from the segment files of the broker `replica(partition)`
    (its leader: in sync, it holds every committed batch); with `payloads`, every record's value too (a line
    a record: only for outputs small enough to hold)."""
    out: dict[int, list[Batch]] = {}
    for partition in partitions:
        kafka = replica(partition)
        folder = f"{LOG_DIR}/{topic}-{partition}"
        status, listing = kafka.output(["sh", "-c", f"ls {folder}/*.log"])
        files = [line.strip() for line in listing.splitlines() if line.strip().endswith(".log")]
        if status != 0 or not files:
            out[partition] = []
            continue
        tool = shlex.join([*TOOL, "--print-data-log" if payloads else "--deep-iteration", "--files", ",".join(files)])
        script = f'{{ {tool} 2>&1; echo "TOOL-EXIT $?"; }}' + ("" if payloads else f" | {KEEP}")
        _, text = kafka.output(["sh", "-c", script])
        if "TOOL-EXIT 0" not in text:
            raise RuntimeError(f"DumpLogSegments on {folder} failed: {text[-300:]}")
        out[partition] = parse(text, partition)
    return out


def batch_at(batches: list[Batch], offset: int) -> Batch | None:
    """The data batch that holds `offset`."""
    return next((b for b in batches if b.base <= offset <= b.last and not b.control), None)


def end_of(batches: list[Batch], batch: Batch) -> Batch | None:
    """The control batch (COMMIT or ABORT) that ended the transaction `batch` was written in, if any."""
    if not batch.transactional:
        return None
    return next((b for b in batches if b.control and b.base > batch.last and b.producer_id == batch.producer_id
                 and b.epoch >= batch.epoch), None)
