"""A pipeline's JSON results are read the same on the fast path (Spark's compact to_json, one pattern) as
on the slow one (json.loads and a check of every field): the same value, or ValueError for both."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.catalog.pipelines.records import JsonResult

pytestmark = pytest.mark.unit
FIELDS = {"user": str, "window_start": int, "count": int, "alert": bool}
READ = JsonResult(FIELDS, "a window result")


def slow(value: bytes) -> dict:
    return READ._checked(json.loads(value))


def same(value: bytes) -> None:
    try:
        want: object = slow(value)
    except ValueError as error:  # json's decode errors are ValueErrors too
        want = type(error)
    try:
        got: object = READ(value)
    except ValueError as error:
        got = type(error)
    assert (got == want) if isinstance(want, dict) else isinstance(got, type), (value, got, want)
    if isinstance(want, dict):
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()]  # type: ignore[union-attr]


results = st.fixed_dictionaries({"user": st.text(), "window_start": st.integers(), "count": st.integers(),
                                 "alert": st.booleans()})


@given(results, st.booleans())
def test_valid_results_read_alike_compact_or_not(result: dict, compact: bool) -> None:
    value = json.dumps(result, separators=(",", ":") if compact else None).encode()
    same(value)
    assert READ(value) == result


@given(st.binary(max_size=80) | st.from_regex(rb'\{"user":"[a-z\\"\x01]*","window_start":-?0*[0-9]{1,3},'
                                               rb'"count":[0-9.e-]{1,4},"alert":(true|false|1|null)\}',
                                               fullmatch=True))
def test_anything_else_reads_alike_or_is_refused_by_both(value: bytes) -> None:
    same(value)


@pytest.mark.parametrize("value", [
    b'{"user":"k","window_start":01,"count":3,"alert":false}',  # a leading zero is not JSON
    b'{"user":"k\x01","window_start":1,"count":3,"alert":false}',  # nor is a raw control character
    b'{"user":"k","window_start":1,"count":3.0,"alert":false}',
    b'{"user":"k","window_start":1,"count":3}',
])
def test_near_misses_are_refused(value: bytes) -> None:
    with pytest.raises(ValueError):
        READ(value)


def rows_one_by_one(values: list[bytes]) -> list[tuple] | type:
    try:
        return [tuple(READ(value)[name] for name in FIELDS) for value in values]  # by name: any field order
    except ValueError as error:
        return type(error)


def rows_as_a_batch(values: list[bytes]) -> list[tuple] | type:
    try:
        return JsonResult(FIELDS, "a window result").many(values, tuple(FIELDS))
    except ValueError as error:
        return type(error)


compact = results.map(lambda result: json.dumps(result, separators=(",", ":")).encode())
odd = st.sampled_from([b"", b"\n", b'{"user":"a\nb","window_start":1,"count":1,"alert":true}', b"\xff",
                       b'{"user":"a","window_start":1,"count":1,"alert":true}\n{"user":"b","window_start":1,'
                       b'"count":1,"alert":true}', b'{"user":"\xc3\xa9","window_start":1,"count":1,"alert":true}',
                       b'{"user": "a", "window_start": 1, "count": 1, "alert": true}',
                       b'{"user":"a","window_start":-0,"count":1,"alert":true}'])


@given(st.lists(compact | odd, max_size=30))
def test_a_batch_reads_as_its_values_one_by_one(values: list[bytes]) -> None:
    """One pass over the joined batch gives each value's fields, or refuses the batch when any value
    is refused alone: a line break inside a value, two results on one line, not UTF-8, not compact."""
    by_batch, one_by_one = rows_as_a_batch(values), rows_one_by_one(values)
    assert by_batch == one_by_one if isinstance(one_by_one, list) else isinstance(by_batch, type), values
    if isinstance(one_by_one, list):
        assert [list(map(type, row)) for row in by_batch] == [list(map(type, row)) for row in one_by_one]
        columns = JsonResult(FIELDS, "a window result").columns(values, tuple(FIELDS))
        assert list(zip(*columns, strict=True)) == by_batch and len(columns) == len(FIELDS)  # same, by column


@given(st.lists(compact | odd, max_size=30))
def test_identities_of_a_batch_are_written_as_one_by_one(values: list[bytes]) -> None:
    """The fields matched as text, joined, are what an f-string of each value's parsed fields writes."""
    try:
        want: object = [f"{r['user']}@{r['window_start']}" for r in map(READ, values)]
    except ValueError as error:
        want = type(error)
    try:
        got: object = JsonResult(FIELDS, "a window result").joined(values, ("user", "window_start"))
    except ValueError as error:
        got = type(error)
    assert got == want, values


def test_a_batch_is_matched_once_for_its_identities_and_its_values() -> None:
    read = JsonResult(FIELDS, "a window result")
    values = [b'{"user":"a","window_start":1,"count":1,"alert":true}']
    assert read.joined(values, ("user", "window_start")) == ["a@1"]
    matched = read.last[1]
    assert read.many(list(values), ("count", "alert")) == [(1, True)] and read.last[1] is matched
    assert read.many([b'{"user":"b","window_start":1,"count":1,"alert":true}'], ("user",)) == [("b",)]
