"""An ORC data file decoded in a child process of bounded memory, its batches streamed back in Arrow's IPC
format.

ORC's reader (pyarrow's, Apache ORC's own) decodes a whole stripe at once, and a dictionary-encoded column
repeats one entry as often as its indices say: a file of a kilobyte the sink wrote could decode to more
memory than the harness has, and nothing in ORC's metadata bounds it before decoding (Parquet's page headers
do: harness.output.parquet_pages). So the decoding runs here, in a process whose address space is capped
(CHILD_MEMORY): a crafted stripe ends this process, never the harness. What it decodes in all stays within
the harness's bound for a data file, or it stops and says so.

    python3 -m harness.output.orc_child MAX_DECODED COLUMN... < file.orc > names line, then an IPC stream
"""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

BATCH = 10_000
CHILD_MEMORY = 3 * 2**30  # the child's address space: a decoded bound of 1 GiB, Python and Arrow, and a margin
NAMES_LIMIT = 2**20  # the names line's longest
SAID_LIMIT = 2000  # what is kept of the child's word on a failure


def orc_batches(data: bytes, columns: list[str], max_decoded: int) -> tuple[list[str], Iterator[pa.RecordBatch]]:
    """The ORC file's column names, and its chosen columns a batch at a time, decoded in a child process;
    ValueError when the file cannot be read or decodes past `max_decoded` bytes."""
    import pyarrow as pa

    child = subprocess.Popen([sys.executable, "-m", __name__, str(max_decoded), *columns],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(data)  # read whole before the child writes anything: no deadlock
        child.stdin.close()
        line = child.stdout.readline(NAMES_LIMIT)
        names = json.loads(line) if line.endswith(b"\n") else None
    except (OSError, ValueError):
        names = None
    if not isinstance(names, list):
        raise ValueError(_ended(child))
    try:
        reader = pa.ipc.open_stream(child.stdout)
    except pa.ArrowException:
        raise ValueError(_ended(child)) from None
    return [str(name) for name in names], _streamed(child, reader)


def _streamed(child: subprocess.Popen, reader: pa.ipc.RecordBatchStreamReader) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    try:
        try:
            yield from reader
        except pa.ArrowException:  # cut short: the child's status says why
            pass
        if child.wait() != 0:
            raise ValueError(_ended(child))
    finally:
        if child.poll() is None:  # the reader stopped early: nothing more is wanted
            child.kill()
            child.wait()


def _ended(child: subprocess.Popen) -> str:
    """Why the child ended without a whole stream: its last line, or the signal that ended it."""
    child.kill()
    status = child.wait()
    said = child.stderr.read(SAID_LIMIT).decode(errors="replace").strip().splitlines() if child.stderr else []
    if said:
        return said[-1][:300]
    return f"its decoder ended by signal {-status}" if status < 0 else f"its decoder exited {status}"


def decode(max_decoded: int, columns: list[str]) -> None:
    """In the child: stdin's ORC file to stdout, its names, then the chosen columns' batches."""
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    data = sys.stdin.buffer.read()
    import pyarrow as pa
    import pyarrow.orc as po

    file = po.ORCFile(io.BytesIO(data))
    names = file.schema.names
    kept = [c for c in columns if c in names]
    out = sys.stdout.buffer
    out.write(json.dumps(names).encode() + b"\n")
    schema = pa.schema([file.schema.field(c) for c in kept])
    decoded = 0
    with pa.ipc.new_stream(out, schema) as writer:
        for stripe in range(file.nstripes):
            batch = file.read_stripe(stripe, columns=kept)
            decoded += batch.nbytes
            if decoded > max_decoded:
                raise ValueError(f"its columns decode to more than {max_decoded:,} bytes: refused")
            batch = pa.RecordBatch.from_arrays(batch.select(kept).columns, schema=schema)  # by name: the file's order
            for start in range(0, batch.num_rows, BATCH):
                writer.write_batch(batch.slice(start, BATCH))


if __name__ == "__main__":
    try:
        decode(int(sys.argv[1]), sys.argv[2:])
    except Exception as error:  # noqa: BLE001 - said in one line to the harness, which refuses the file
        print(f"{type(error).__name__}: {str(error)[:300]}", file=sys.stderr)
        raise SystemExit(1) from None
