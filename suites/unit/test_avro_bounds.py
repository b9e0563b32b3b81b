"""Avro files the sink wrote (Hudi instants, Paimon and Iceberg manifests) are bounded before they are
decoded: a few kilobytes of compressed block must not inflate to gigabytes in the harness."""

from __future__ import annotations

import io

import fastavro
import pytest

from harness.output import avro_bounds
from harness.output.avro_bounds import check_avro

pytestmark = pytest.mark.unit
SCHEMA = fastavro.parse_schema({"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]})


def avro(records: list[dict], codec: str) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, SCHEMA, records, codec=codec)
    return out.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard", "bzip2", "xz"])
def test_a_file_within_the_bounds_passes_for_every_codec(codec: str) -> None:
    check_avro(avro([{"s": f"row {i}"} for i in range(1000)], codec), "m.avro")


@pytest.mark.parametrize("codec", ["deflate", "zstandard", "bzip2", "xz"])
def test_a_block_that_inflates_past_the_bound_is_refused_undecoded(codec: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(avro_bounds, "MAX_DECOMPRESSED", 2**20)
    data = avro([{"s": "\0" * 4 * 2**20}], codec)
    assert len(data) < 2**16  # kilobytes on the volume
    with pytest.raises(ValueError, match="decodes to more than"):
        check_avro(data, "m.avro")


def test_a_block_claiming_more_records_than_the_bound_is_refused() -> None:
    data = bytearray(avro([{"s": "x"}], "null"))
    header_end = data.index(b"\x02\x04\x02x") if b"\x02\x04\x02x" in data else None  # count 1, size 2, "x"
    assert header_end is not None
    data[header_end:header_end + 1] = b"\xfe\xff\xff\xff\x0f"  # count 2^31 - 1, zigzag
    with pytest.raises(ValueError, match="records"):
        check_avro(bytes(data), "m.avro")


@pytest.mark.parametrize("data", [b"", b"not avro", b"Obj\x01\x02"])
def test_what_is_not_an_avro_file_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        check_avro(data, "m.avro")
