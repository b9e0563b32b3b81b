"""The checkpoint volume as the harness reads it: through the relay (harness.gate.relay), over its published
port, so that the checkpoint triggers and shipped code need no host path inside the engine."""

from __future__ import annotations

import base64
import json
import socket
import threading

from harness.gate.relay import LINE_LIMIT, REPLY_LIMIT, keep_alive

PATH_ROOM = 4096  # the request's path and JSON around the data
MAX_WRITE = (LINE_LIMIT - PATH_ROOM) // 4 * 3  # the largest file one write carries (base64 takes 4 bytes per 3)


class RelayFiles:
    """Blocking file operations on the run's checkpoint volume; one connection, shared by threads."""

    def __init__(self, host: str, port: int, secret: str, timeout: float = 30.0) -> None:
        self.address = (host, port)
        self.secret = secret
        self.timeout = timeout
        self._lock = threading.Lock()
        self._connection: socket.socket | None = None
        self._replies = None

    def _ask(self, request: dict) -> dict:
        with self._lock:
            for attempt in (1, 2):  # once more on a fresh connection: the relay may have closed an idle one
                try:
                    if self._connection is None:
                        self._connection = socket.create_connection(self.address, timeout=self.timeout)
                        keep_alive(self._connection)
                        self._connection.sendall(f"{self.secret} files\n".encode())
                        self._replies = self._connection.makefile("rb")
                    self._connection.sendall(json.dumps(request).encode() + b"\n")
                    line = self._replies.readline(REPLY_LIMIT)  # type: ignore[union-attr]
                    if not line:
                        raise ConnectionError("the relay closed the connection")
                    if not line.endswith(b"\n"):  # never more than a read's reply: the connection is out of step
                        raise ConnectionError(f"a reply of the relay longer than {REPLY_LIMIT:,} bytes")
                    break
                except OSError:
                    self.close()
                    if attempt == 2:
                        raise
        reply = json.loads(line)
        if "error" in reply:
            raise OSError(f"{request['op']} {request['path']}: {reply['error']}")
        return reply

    def walk(self, path: str) -> list[str]:
        """Every file under `path`, relative to it; none when it does not exist."""
        return list(self._ask({"op": "walk", "path": path})["files"])

    def tree(self, path: str) -> tuple[list[str], list[str]]:
        """Every folder (an empty one too) and every file under `path`, relative to it, from one walk; none when it
        does not exist."""
        answer = self._ask({"op": "tree", "path": path})
        return list(answer["folders"]), list(answer["files"])

    def mtime(self, path: str) -> float:
        """When a file was last written (unix seconds: the relay's host is the harness's)."""
        return float(self._ask({"op": "mtime", "path": path})["mtime"])

    def read_bytes(self, path: str) -> bytes:
        """A file whole (the relay's `read` carries any bytes: base64 in its JSON reply)."""
        return base64.b64decode(self._ask({"op": "read", "path": path})["data"])

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode()

    def write(self, path: str, data: bytes) -> None:
        """Write a file whole (a reader polling for it never sees it half written); folders are made."""
        if len(data) > MAX_WRITE:
            raise ValueError(f"write {path}: {len(data):,} bytes, over the relay's limit of {MAX_WRITE:,}")
        self._ask({"op": "write", "path": path, "data": base64.b64encode(data).decode()})

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        self._connection = self._replies = None
