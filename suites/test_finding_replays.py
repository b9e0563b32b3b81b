"""The Iceberg replay finding end to end, made to happen every time rather than when chance allows
(docs/findings/iceberg-streaming-replay-overwrites-a-committed-file.md).

What decides it is put in place, the fault is not bent: one executor (a task set's tasks are launched in the
order of their partitions, so a partition gets the same task id in each driver) and a table made by a
statement that runs no job (so the first driver's batch 0 counts its task ids from 0, as the replay's does).
Then every data file of batch 0 is written again by the replay, each by the task of the same partition and id.
Whether the files then hold other rows than their commit recorded depends on the input topic's name alone (the
order the Kafka source gives the first attempt's partitions, against the replay's; each a Scala map's order):
the test reads both from the topic's name and the Spark line's Scala version, and asserts the outcome they
predict. (All of batch 0's files replaced, the table holds each record once, in
files its manifests describe wrongly; one replaced, as chance did in the run that found it, loses and
duplicates records.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.explore.campaign import releases
from harness.run.session import scenario, session
from suites.test_faults import assert_fired_with_effect

pytestmark = [pytest.mark.chaos, pytest.mark.finding]
ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "findings" / "iceberg-streaming-replay-overwrites-a-committed-file.md"
SINK = f"{ROOT / 'fixtures' / 'user_sinks' / 'iceberg_streaming_create_table.py'}:sink"
RECORDS = 4000  # four batches: batch 0 is the one replayed
PARTITIONS = 4  # up to four, the first attempt's order is the topic name's hash order (the page)
# where the table lives: the fault that replays batch 0 after its commit applied
FAULTS = {"s3": "drop:sender@catalog.commit", "volume": "kill:driver@table.committed:0"}  # batch 0: the first commit


def orders(topic: str, scala: str) -> tuple[list[int], list[int]]:
    """The page's own functions: the Kafka partitions in the order the first attempt's Spark partitions read
    them, and in the order the replay's do (each a Scala map's order: the Spark line's Scala version's)."""
    code = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert code is not None, "the page lost its function"
    names: dict = {}
    exec(code[1], names)  # noqa: S102 - the page's code, which suites/unit/test_findings.py checks
    return names["first_attempt_order"](topic, PARTITIONS, scala), names["replay_order"](PARTITIONS, scala)


# each store, on each Iceberg release each Spark line offers where tables live on that store (a campaign's)
PLACES = [(store, stack.line, stack.iceberg) for store in ("s3", "volume") for stack in releases("iceberg", store)]


@pytest.fixture(scope="module", params=PLACES,
                ids=[f"{store}-spark{line}-iceberg{iceberg}" for store, line, iceberg in PLACES])
def one_executor(request: pytest.FixtureRequest) -> Iterator[tuple[object, str, str]]:
    store, line, iceberg = request.param
    with session(workers=1, spark=line, iceberg=iceberg, output="iceberg", store=store) as opened:
        yield opened.cluster, store, opened.cluster.images.stack.scala


@pytest.mark.parametrize("run", range(1, 6))
def test_iceberg_a_replayed_batch_0_writes_every_committed_file_again(one_executor, run: int) -> None:  # type: ignore[no-untyped-def]
    cluster, store, scala = one_executor
    fault = FAULTS[store]
    result = scenario(cluster, f"iceberg-replay-{store}-{run}", sink=SINK, output="iceberg", store=store,
                      faults=[fault], records=RECORDS, partitions=PARTITIONS, engine_read=True).run()

    assert_fired_with_effect(result, fault)
    topic = next(e["input_topic"] for e in result.events("scenario.start"))
    first, replay = orders(topic, scala)
    if store == "s3":  # the gate saw the S3 server write each Spark partition's file of epoch 0 a second time
        again = [m.groups() for e in result.events("s3.overwrite")
                 if (m := re.search(r"/(\d{5})-(\d+)-[0-9a-f-]{36}-0-\d{5}\.parquet$", e["key"]))]
        assert sorted(again) == [(f"{p:05d}", str(p)) for p in range(PARTITIONS)], again
    if first == replay:  # each Spark partition read the same Kafka partition both times: the same rows
        assert result.exactly_once, (first, result.summary())
    else:  # each file whose partition read another Kafka partition holds other rows than its commit recorded
        moved = sum(a != b for a, b in zip(first, replay, strict=True))
        rewritten = result.verdict.anomalies.get("file_rewritten")
        assert rewritten is not None and rewritten.count == moved, (first, replay, result.summary())
        read = result.engine_read or {}  # Spark reads each file by the size its manifest recorded
        if store == "s3":  # a file now shorter than recorded (one always is): a read past its end fails (a 416
            assert "error" in read, read  # to a ranged GET; an end of stream on Iceberg 1.12.0)
        else:  # on the volume it fails so too (1.12.0), or reads some of the table's rows, never others (1.11.0)
            assert "error" in read or (read.get("repeated") == 0 and read.get("only_spark", 0) == 0), read
