"""What the gate says of an HTTP request, whichever server's it is: its kind for the history and the point it
reaches (Named: an S3 request's, harness.gate.s3_requests; a REST catalog request's,
harness.gate.catalog_requests), and a point as reported, as it arrives and as it is answered (HttpCommit,
HttpAnswer)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Named:
    """What a request does, for the history (`kind`), and the point it reaches, if any (`point`), with what
    the gate reports of it."""

    kind: str
    point: str | None = None
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HttpCommit:
    """A request that is a point, as the client sent it."""

    method: str
    target: str
    details: dict = field(default_factory=dict)

    def fields(self) -> dict:
        return {"phase": "request", "method": self.method, "target": self.target, **self.details}


@dataclass(frozen=True)
class HttpAnswer:
    """A point's answer: the server's status (it acted on the request)."""

    commit: HttpCommit
    status: int

    def fields(self) -> dict:
        return {**self.commit.fields(), "phase": "response", "status": self.status}
