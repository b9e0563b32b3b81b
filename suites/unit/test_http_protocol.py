"""The gate's HTTP reading (harness.gate.http_framing, and what a request means: harness.gate.s3_requests,
harness.gate.catalog_requests) on bytes real clients and servers exchanged: Spark's S3A (Delta) and S3FileIO
(Iceberg) with versitygw, Iceberg's REST client with its REST catalog server (fixtures/http, recorded as
notes/http-recordings.md says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.gate.catalog_requests import CATALOG_COMMIT, catalog_error, name_catalog, wants_body
from harness.gate.http_framing import (
    MAX_BODY,
    MAX_HEAD,
    Body,
    BodyBuffer,
    End,
    ProtocolError,
    Request,
    Response,
    framers,
)
from harness.gate.s3_requests import S3_PUT, name_s3, no_commits, s3_error
from harness.output.registry import store

pytestmark = pytest.mark.unit


def TABLES(key: str) -> dict | None:  # noqa: N802 - stands for the stores' own
    """The commit objects of Delta's and Iceberg's tables, as each store names them."""
    return store("delta").commit_object(key) or store("iceberg").commit_object(key)

FIXTURES = Path(__file__).parent / "fixtures" / "http"
RECORDINGS = sorted(path.stem for path in FIXTURES.glob("*.request"))


def recording(name: str) -> tuple[bytes, bytes]:
    return (FIXTURES / f"{name}.request").read_bytes(), (FIXTURES / f"{name}.response").read_bytes()


def exchange(name: str, step: int | None = None) -> tuple[list, list]:
    """A recording's parts both ways, fed whole or `step` bytes at a time; requests first, as they went."""
    requests, responses = framers()
    sent, received = recording(name)
    feed = (lambda framer, data: framer.feed(data)) if step is None else (
        lambda framer, data: [part for i in range(0, len(data), step) for part in framer.feed(data[i:i + step])])
    return feed(requests, sent), feed(responses, received) + responses.eof()


def heads(parts: list, kind: type) -> list:
    return [part for part in parts if isinstance(part, kind)]


def whole_body(parts: list, head: object) -> bytes:
    """The content of the message `head` starts."""
    start = parts.index(head)
    end = next(i for i in range(start, len(parts)) if isinstance(parts[i], End))
    return b"".join(part.data for part in parts[start:end] if isinstance(part, Body))


@pytest.mark.parametrize("name", RECORDINGS)
def test_a_recording_is_cut_into_its_messages_with_every_byte_kept(name: str) -> None:
    sent, received = recording(name)
    request_parts, response_parts = exchange(name)
    assert b"".join(part.raw for part in request_parts) == sent
    assert b"".join(part.raw for part in response_parts) == received
    finals = [r for r in heads(response_parts, Response) if not r.interim]
    assert [r.request for r in finals] == heads(request_parts, Request)  # each answer paired with its request
    assert isinstance(request_parts[-1], End) and isinstance(response_parts[-1], End)


@pytest.mark.parametrize("name", ["delta-commit-put", "catalog-commit", "catalog-config"])
def test_framing_does_not_depend_on_how_tcp_cut_the_bytes(name: str) -> None:
    whole = exchange(name)
    for step in (1, 2, 3, 7, 64, 1000):
        split = exchange(name, step)
        for direction in (0, 1):
            assert [p for p in whole[direction] if not isinstance(p, Body)] == \
                [p for p in split[direction] if not isinstance(p, Body)]
            assert b"".join(p.raw for p in split[direction]) == b"".join(p.raw for p in whole[direction])


def test_every_split_point_of_the_delta_commit_gives_the_same_parts() -> None:
    sent, received = recording("delta-commit-put")
    for data, index in ((sent, 0), (received, 1)):
        expected = [p for p in exchange("delta-commit-put")[index] if not isinstance(p, Body)]
        for cut in range(len(data) + 1):
            requests, responses = framers()
            if index:
                requests.feed(sent)
            framer = responses if index else requests
            parts = framer.feed(data[:cut]) + framer.feed(data[cut:])
            assert [p for p in parts if not isinstance(p, Body)] == expected, cut
            assert b"".join(p.raw for p in parts) == data


def test_the_delta_commit_is_an_s3_put_point_streamed_after_a_100_continue() -> None:
    request_parts, response_parts = exchange("delta-commit-put")
    (request,) = heads(request_parts, Request)
    assert request.header("expect") == "100-continue"  # S3A: the head goes first, the body after the 100
    assert request.header("content-encoding") == "aws-chunked"
    named = name_s3(request, commits=TABLES)
    assert named.point == S3_PUT
    assert named.details == {"bucket": "harness", "key": "delta/t/_delta_log/00000000000000000003.json",
                             "format": "delta", "version": 3, "multipart": False, "conditional": {}}
    continue_, final = heads(response_parts, Response)
    assert (continue_.status, continue_.interim, final.status) == (100, True, 200)
    assert continue_.request is final.request is request


def test_the_head_comes_out_before_its_body_arrives() -> None:
    """Expect: 100-continue: the client sends nothing more until the server's 100; the gate must forward the
    head without waiting for the body."""
    sent, _ = recording("delta-commit-put")
    head_end = sent.index(b"\r\n\r\n") + 4
    requests, _ = framers()
    parts = requests.feed(sent[:head_end])
    assert len(parts) == 1 and isinstance(parts[0], Request)
    assert not requests.idle


def test_the_iceberg_metadata_put_is_an_s3_put_point() -> None:
    (request,) = heads(exchange("iceberg-metadata-put")[0], Request)
    named = name_s3(request, commits=TABLES)
    assert named.point == S3_PUT
    assert named.details["format"] == "iceberg" and named.details["version"] == 2
    assert named.details["conditional"] == {}  # S3FileIO sends no If-None-Match
    assert request.header("x-amz-trailer") == "x-amz-checksum-crc32"


def test_a_head_request_s_answer_has_no_body_whatever_its_content_length() -> None:
    for name in ("s3-head-404", "catalog-head-404"):
        request_parts, response_parts = exchange(name)
        (response,) = heads(response_parts, Response)
        assert response.request.method == "HEAD" and response.status == 404
        assert int(response.header("content-length")) > 0
        assert response_parts == [response, End()]


@pytest.mark.parametrize("name, kind", [("s3-list", "s3.list"), ("s3-copy", "s3.copy"), ("s3-head-404", "s3.head")])
def test_other_s3_requests_are_named_but_are_no_points(name: str, kind: str) -> None:
    (request,) = heads(exchange(name)[0], Request)
    named = name_s3(request, commits=TABLES)
    assert (named.kind, named.point) == (kind, None)


def test_the_catalog_commit_is_named_from_its_path_and_detailed_from_its_body() -> None:
    request_parts, response_parts = exchange("catalog-commit")
    (request,) = heads(request_parts, Request)
    assert wants_body(request)
    body = BodyBuffer(request)
    for part in request_parts[1:]:
        if isinstance(part, Body):
            body.add(part)
    assert name_catalog(request).details == {"namespace": ["db"], "name": "t"}
    named = name_catalog(request, bytes(body.data))
    assert named.point == CATALOG_COMMIT
    assert named.details["tables"] == [{
        "table": {"namespace": ["db"], "name": "t"}, "adds_snapshots": [569762670209887514],
        "sets_refs": {"main": 569762670209887514}, "asserts_refs": {"main": 2167329897183151774}, "creates": False}]
    (response,) = heads(response_parts, Response)
    assert response.status == 200 and response.header("transfer-encoding") == "chunked"
    assert response.header("content-encoding") == "gzip"  # Jetty's: the gate does not read it


def test_catalog_routes_with_a_prefix_a_multi_level_namespace_and_a_transaction() -> None:
    def request(method: str, target: str) -> Request:
        return Request(method, target, "HTTP/1.1", (), b"")

    commit = name_catalog(request("POST", "/v1/wh1/namespaces/a%1Fb/tables/t"))
    assert (commit.point, commit.details) == (CATALOG_COMMIT, {"prefix": "wh1", "namespace": ["a", "b"], "name": "t"})
    dotted = name_catalog(request("POST", "/v1/namespaces/a%2Eb/tables/t"), separator="%2E")
    assert dotted.details["namespace"] == ["a", "b"]
    body = {"table-changes": [{"identifier": {"namespace": ["a"], "name": "t1"},
                               "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
                               "updates": [{"action": "add-snapshot", "snapshot": {"snapshot-id": 7}}]}]}
    transaction = name_catalog(request("POST", "/v1/transactions/commit"), json.dumps(body).encode())
    assert transaction.point == CATALOG_COMMIT
    assert transaction.details["tables"][0]["table"] == {"namespace": ["a"], "name": "t1"}
    assert transaction.details["tables"][0]["asserts_refs"] == {"main": None}  # the ref must not exist yet
    config = name_catalog(heads(exchange("catalog-config")[0], Request)[0])
    assert (config.kind, config.point) == ("catalog.config", None)
    assert name_catalog(request("GET", "/v1/namespaces/db/tables/t")).kind == "catalog.load_table"
    assert name_catalog(request("POST", "/v1/namespaces/db/tables/t/metrics")).point is None
    with pytest.raises(ProtocolError):
        name_catalog(request("POST", "/v1/namespaces/db/tables/t"), b"{not json")


@pytest.mark.parametrize(("method", "target", "headers", "kind"), [
    ("PUT", "/bkt/tbl/_delta_log/00000000000000000007.json", (("x-amz-copy-source", "/bkt/tbl/staged.json"),),
     "s3.copy"),
    ("POST", "/bkt/tbl/_delta_log/00000000000000000007.json?uploadId=u1", (), "s3.complete_upload"),
    ("PUT", "/bkt/tbl/_delta_log/x/../00000000000000000007.json", (), "s3.put"),
    ("PUT", "/bkt/tbl/_delta_log/./00000000000000000007.json", (), "s3.put"),
], ids=["copy-onto-it", "multipart-completion", "dot-dot-segment", "dot-segment"])
def test_a_commit_object_written_any_way_is_the_commit_point(method: str, target: str, headers: tuple,
                                                              kind: str) -> None:
    """By what it writes, not how: a copy onto the commit's key, a multipart completion, a key whose dot
    segments a server that keeps objects as files resolves to the commit's."""
    named = name_s3(Request(method, target, "HTTP/1.1", headers, b""), commits=TABLES)
    assert (named.kind, named.point, named.details["version"]) == (kind, S3_PUT, 7)
    copy_elsewhere = Request("PUT", "/bkt/tbl/other.json", "HTTP/1.1", (("x-amz-copy-source", "/bkt/a"),), b"")
    assert name_s3(copy_elsewhere, commits=TABLES).point is None


def test_s3_virtual_hosted_requests_and_conditional_puts() -> None:
    key = "tbl/_delta_log/00000000000000000012.json"
    virtual = Request("PUT", f"/{key}", "HTTP/1.1", (("Host", "bkt.s3.us-east-1.amazonaws.com"),
                                                     ("If-None-Match", "*")), b"")
    named = name_s3(virtual, commits=TABLES)
    assert named.point == S3_PUT
    assert (named.details["bucket"], named.details["key"], named.details["version"]) == ("bkt", key, 12)
    assert named.details["conditional"] == {"if-none-match": "*"}
    custom = Request("PUT", "/t/metadata/v3.metadata.json", "HTTP/1.1", (("Host", "bkt.store.test:7070"),), b"")
    assert name_s3(custom, domain="store.test", commits=TABLES).details["bucket"] == "bkt"
    assert name_s3(custom, domain="store.test", commits=TABLES).details["version"] == 3
    data = Request("PUT", "/bkt/t/data/part-0.parquet", "HTTP/1.1", (), b"")
    assert (name_s3(data, commits=TABLES).kind, name_s3(data, commits=TABLES).point) == ("s3.put", None)
    part = Request("PUT", "/bkt/t/_delta_log/00000000000000000001.json?partNumber=1&uploadId=x", "HTTP/1.1", (), b"")
    assert (name_s3(part, commits=TABLES).kind, name_s3(part, commits=TABLES).point) == ("s3.upload_part", None)
    complete = Request("POST", "/bkt/t/_delta_log/00000000000000000001.json?uploadId=x", "HTTP/1.1", (), b"")
    assert name_s3(complete, commits=TABLES).point == S3_PUT and name_s3(complete, commits=TABLES).details["multipart"]


def test_a_chunked_body_with_trailers_and_a_body_read_to_the_close() -> None:
    requests, responses = framers()
    requests.feed(b"GET /x HTTP/1.1\r\nHost: h\r\n\r\nGET /y HTTP/1.0\r\n\r\n")
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"
    parts = responses.feed(chunked + b"HTTP/1.0 200 OK\r\n\r\nuntil")
    assert parts[-1] == Body(b"until", b"until")
    assert parts[1] == Body(b"3;ext=1\r\nabc\r\n", b"abc")
    assert parts[2] == End(b"0\r\nX-Sum: 9\r\n\r\n", (("X-Sum", "9"),))
    assert responses.feed(b" close") == [Body(b" close", b" close")]
    assert responses.eof() == [End()]
    assert responses.idle


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(status: int) -> None:
    requests, responses = framers()
    requests.feed(b"GET /x HTTP/1.1\r\n\r\n")
    response = f"HTTP/1.1 {status} X\r\nContent-Length: 10\r\n\r\n".encode()
    assert responses.feed(response)[1:] == [End()]


@pytest.mark.parametrize("head", [
    b"PUT /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nContent-Length: 12a\r\n\r\n",
    "PUT /x HTTP/1.1\r\nContent-Length: \u00b2\r\n\r\n".encode(),  # '²'.isdigit() is True
    "PUT /x HTTP/1.1\r\nContent-Length: \u0663\r\n\r\n".encode(),  # Arabic-Indic three
    b"PUT /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
    b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXY",
    b"PUT /x HTTP/1.1\r\nbad header\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n",
    b"PUT  /x HTTP/1.1\r\n\r\n",
    b"PUT /x HTTP/2.0\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS ClientHello's start
])
def test_malformed_requests_are_refused(head: bytes) -> None:
    requests, _ = framers()
    with pytest.raises(ProtocolError):
        requests.feed(head)


@pytest.mark.parametrize("data", [
    b"HTTP/1.1 2000 OK\r\n\r\n", b"HTTP/1.1 101 Switching Protocols\r\n\r\n", b"HTTP/1.1 ok\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 5000,
])
def test_malformed_responses_are_refused(data: bytes) -> None:
    _, responses = framers()
    with pytest.raises(ProtocolError):
        responses.feed(data)


def test_bounds() -> None:
    requests, _ = framers()
    with pytest.raises(ProtocolError):
        requests.feed(b"GET /x HTTP/1.1\r\nX: " + b"a" * MAX_HEAD)
    requests, _ = framers()
    trailer = b"PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + b"X: y\r\n" * (MAX_HEAD // 6 + 1)
    with pytest.raises(ProtocolError):
        requests.feed(trailer)
    big = Request("POST", "/v1/namespaces/db/tables/t", "HTTP/1.1", (("Content-Length", str(MAX_BODY + 1)),), b"")
    with pytest.raises(ProtocolError):
        BodyBuffer(big)
    chunked = BodyBuffer(Request("POST", "/", "HTTP/1.1", (("Transfer-Encoding", "chunked"),), b""), limit=4)
    chunked.add(Body(b"3\r\nabc\r\n", b"abc"))
    with pytest.raises(ProtocolError):
        chunked.add(Body(b"2\r\nde\r\n", b"de"))
    # a body the gate streams has no bound
    requests, _ = framers()
    parts = requests.feed(f"PUT /b/k HTTP/1.1\r\nContent-Length: {MAX_BODY * 4}\r\n\r\n".encode() + b"x" * 100)
    assert isinstance(parts[-1], Body)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_synthetic_answers_parse_back_as_their_server_s(status: int) -> None:
    (s3_request,) = heads(exchange("delta-commit-put")[0], Request)
    (catalog_request,) = heads(exchange("catalog-commit")[0], Request)
    for request, answer in ((s3_request, s3_error(s3_request, status, "injected by the gate")),
                            (catalog_request, catalog_error(catalog_request, status, "injected by the gate"))):
        requests, responses = framers()
        requests.feed(request.raw)
        parts = responses.feed(answer)
        response = parts[0]
        assert isinstance(response, Response) and response.status == status and response.request == request
        assert response.header("connection") == "close" and isinstance(parts[-1], End)
        body = whole_body(parts, response)
        if request is s3_request:
            assert body.startswith(b'<?xml') and b"<Code>" in body
            assert b"<Resource>/harness/delta/t/_delta_log/00000000000000000003.json</Resource>" in body
        else:
            error = json.loads(body)["error"]
            assert error["code"] == status and error["message"] == "injected by the gate"
    assert b"<Code>ServiceUnavailable</Code>" in s3_error(s3_request, 503, "m")
    assert b"<Code>SlowDown</Code>" in s3_error(s3_request, 503, "m", code="SlowDown")
    assert json.loads(catalog_error(catalog_request, 500, "m").split(b"\r\n\r\n")[1])["error"]["type"] == \
        "CommitStateUnknownException"


def test_a_synthetic_answer_to_a_head_has_no_body() -> None:
    (request,) = heads(exchange("s3-head-404")[0], Request)
    answer = s3_error(request, 503, "m")
    assert answer.endswith(b"\r\n\r\n") and b"Content-Length: " in answer


def test_empty_lines_before_a_head_are_dropped_as_they_come_and_bounded() -> None:
    """A flood of CRLF is not kept and scanned again on every read (it took 90 s of CPU for 10 MiB): each
    feed's empty lines are dropped, the head after them read as usual, and more than a head's bound refused."""
    import time

    sent, _ = recording("delta-commit-put")
    requests, _ = framers()
    assert requests.feed(b"\r\n" * 1000) == [] and len(requests.buffer) == 0
    assert heads(requests.feed(sent), Request), "the head after the empty lines"
    flooded, _ = framers()
    started = time.monotonic()
    with pytest.raises(ProtocolError, match="empty lines before a head"):
        for _ in range(MAX_HEAD // 512 + 2):
            flooded.feed(b"\r\n" * 256)
    assert time.monotonic() - started < 1.0


def test_which_objects_are_commits_is_the_run_s_store_s_word() -> None:
    """The gate names no format: between runs no object is a commit, and in a run only its store's are."""
    delta = Request("PUT", "/bkt/t/_delta_log/00000000000000000004.json", "HTTP/1.1", (), b"")
    iceberg = Request("PUT", "/bkt/t/metadata/00004-0f8fad5b-d9cb-469f-a165-70867728950e.metadata.json",
                      "HTTP/1.1", (), b"")
    assert name_s3(delta).point is None and name_s3(delta, commits=no_commits).point is None
    assert name_s3(delta, commits=store("delta").commit_object).details["version"] == 4
    assert name_s3(iceberg, commits=store("delta").commit_object).point is None
    assert name_s3(iceberg, commits=store("iceberg").commit_object).details == {
        "bucket": "bkt", "key": iceberg.target.removeprefix("/bkt/"), "format": "iceberg", "version": 4,
        "multipart": False, "conditional": {}}
    assert all(store(name).commit_object("t/_delta_log/00000000000000000004.json") is None
               for name in ("kafka", "postgres", "hudi", "paimon"))
