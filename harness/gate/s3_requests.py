"""What an S3 request means, for the gate: the bucket and key it names, its kind for the history, and the point
`s3.put`, the write of a table's commit object however it is sent (which keys are commit objects, the run's
store says: `CommitKeys`, harness.output.base.Store.commit_object); and S3's error answer, which the gate gives
in the server's place. Other requests are named by kind for the history only. The bytes are read by
harness.gate.http_framing.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.sax.saxutils import escape

from harness.gate.http_framing import Request, answer, retry_after_header
from harness.gate.http_points import Named

S3_PUT = "s3.put"

CommitKeys = Callable[[str], dict | None]  # an object's key -> its table's commit (format, version), else None


def no_commits(key: str) -> dict | None:
    """No key is a commit object: the gate's keys between runs, and for a store with no table on S3."""
    return None


# A virtual-hosted request's Host: `<bucket>.s3.<region>.amazonaws.com`, `<bucket>.s3-<region>...`
_VIRTUAL_HOST = re.compile(r"(?P<bucket>[a-z0-9][a-z0-9.-]*?)\.s3[.-].*")


def s3_location(request: Request, domain: str | None = None) -> tuple[str, str]:
    """The bucket and key a request names: in its path (`/bucket/key`, path-style), or the bucket in its Host
    (virtual-hosted: `bucket.s3.…`, or `bucket.<domain>` for a server that serves buckets as subdomains of
    `domain`)."""
    split = urlsplit(request.target)  # an origin-form target, or an absolute-form one through a proxy
    host = (split.hostname or (request.header("host") or "").rpartition(":")[0] or request.header("host") or "")
    host = host.lower()
    path = unquote(split.path).removeprefix("/")
    virtual = _VIRTUAL_HOST.fullmatch(host)
    if domain and host.endswith("." + domain.lower()):
        return host[: -len(domain) - 1], path
    if virtual:
        return virtual["bucket"], path
    bucket, _, key = path.partition("/")
    return bucket, key


def name_s3(request: Request, domain: str | None = None, commits: CommitKeys = no_commits) -> Named:
    """An S3 request's kind; a write of a commit object is the point `s3.put`, by what it writes, however it
    is sent: a PUT, the completion of its multipart upload, or a copy onto it (`x-amz-copy-source`); its key
    as written or as a server that stores objects as files resolves it (`_delta_log/x/../N.json`); `commits`:
    which keys are commit objects."""
    bucket, key = s3_location(request, domain)
    query = dict(parse_qsl(urlsplit(request.target).query, keep_blank_values=True))
    method = request.method
    where = {"bucket": bucket, **({"key": key} if key else {})}
    if not key:
        kind = {"PUT": "s3.create_bucket", "DELETE": "s3.delete_bucket", "HEAD": "s3.head_bucket"}.get(method)
        if method == "GET":
            kind = "s3.list_uploads" if "uploads" in query else "s3.list"
        elif method == "POST":
            kind = "s3.delete_objects" if "delete" in query else "s3.post"
        return Named(kind or f"s3.{method.lower()}", None, where)
    if method == "PUT" and "partNumber" in query:
        kind = "s3.copy_part" if request.header("x-amz-copy-source") else "s3.upload_part"
        return Named(kind, None, {**where, "part": query["partNumber"]})
    if method == "POST" and "uploads" in query:
        return Named("s3.create_upload", None, where)
    if method == "DELETE" and "uploadId" in query:
        return Named("s3.abort_upload", None, where)
    if method == "PUT" and request.header("x-amz-copy-source"):
        source = unquote(request.header("x-amz-copy-source") or "")
        commit = commit_object(key, commits)
        return Named("s3.copy", S3_PUT if commit else None, {**where, "source": source, **(commit or {})})
    multipart = method == "POST" and "uploadId" in query
    if method != "PUT" and not multipart:
        kind = {"GET": "s3.get", "HEAD": "s3.head", "DELETE": "s3.delete"}.get(method, f"s3.{method.lower()}")
        return Named(kind, None, where)
    kind = "s3.complete_upload" if multipart else "s3.put"
    commit = commit_object(key, commits)
    if commit is None:
        return Named(kind, None, where)
    conditions = {name: request.header(name) for name in ("if-none-match", "if-match")}
    return Named(kind, S3_PUT, {**where, **commit, "multipart": multipart,
                                "conditional": {k: v for k, v in conditions.items() if v is not None}})


def commit_object(key: str, commits: CommitKeys) -> dict | None:
    """A table's commit object's format and version (`commits` says which keys are), None for any other key:
    as written, or with its dot segments resolved (a server that keeps objects as files stores `a/x/../b` at
    `a/b`)."""
    found = commits(key)
    if found is None and any(segment in (".", "..") for segment in key.split("/")):
        found = commits(posixpath.normpath(key).lstrip("/"))
    return found


# S3's error codes by status. S3 sends no 502 or 504 of its own (a proxy in front of it does): those get its
# generic server error. `SlowDown` (503, throttling) is another 503 a caller may choose.
S3_CODES = {400: "InvalidRequest", 403: "AccessDenied", 404: "NoSuchKey", 409: "ConditionalRequestConflict",
            412: "PreconditionFailed", 500: "InternalError", 501: "NotImplemented", 502: "InternalError",
            503: "ServiceUnavailable", 504: "InternalError"}


def s3_error(request: Request, status: int, message: str, code: str | None = None, request_id: str = "gate",
             domain: str | None = None, retry_after: int | None = None) -> bytes:
    """S3's answer to `request` with `status`: its XML Error document (the code S3 gives that status unless
    `code` is given), naming the request's object as its Resource."""
    code = code or S3_CODES.get(status)
    if code is None:
        raise ValueError(f"no S3 error code for status {status}: give one")
    bucket, key = s3_location(request, domain)
    body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{escape(code)}</Code><Message>{escape(message)}</Message>"
            f"<Resource>/{escape(bucket)}{'/' + escape(key) if key else ''}</Resource>"
            f"<RequestId>{escape(request_id)}</RequestId></Error>").encode()
    return answer(request, status, "application/xml", body,
                  (("x-amz-request-id", request_id), *retry_after_header(retry_after)))

