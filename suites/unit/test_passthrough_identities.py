"""The passthrough output's identities read a batch at a time are those read one record at a time, or
the batch is refused where one record is."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.catalog.pipelines import passthrough

pytestmark = pytest.mark.unit

outputs = st.fixed_dictionaries({
    "id": st.text(), "key": st.text(alphabet="k0123456789", max_size=5), "seq": st.integers(), "ts": st.integers(),
    "amount": st.floats(allow_nan=False, allow_infinity=False), "amount_cents": st.integers(),
}).map(lambda output: json.dumps(output, separators=(",", ":")).encode())
odd = st.sampled_from([b"", b"[]", b"\xff", b'{"id":"a\nb"}', b'{"id":1}', b'{"id": "spaced"}',
                       b'{"id":"a","key":"k","seq":1,"ts":2,"amount":1.5,"amount_cents":150}\n'
                       b'{"id":"b","key":"k","seq":1,"ts":2,"amount":1.5,"amount_cents":150}'])


def read(function, values):  # type: ignore[no-untyped-def]
    try:
        return function(values)
    except ValueError as error:
        return type(error)


@given(st.lists(outputs | odd, max_size=30))
def test_a_batch_is_identified_as_its_records_one_by_one(values: list[bytes]) -> None:
    one_by_one = read(lambda vs: [passthrough.identity(v) for v in vs], values)
    by_batch = read(passthrough.identities, values)
    assert by_batch == one_by_one if isinstance(one_by_one, list) else isinstance(by_batch, type), values
