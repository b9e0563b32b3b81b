"""The relay: the run's foothold inside the engine's network, so that nothing in a container has to reach
the harness's host (an engine in a VM, on another machine, in Docker-in-Docker).

It runs in a container on the run's network (standard library only) and listens on two ports:

- CLIENT_PORT + n - 1 for broker n, on the network: where broker n's chaos listener points the system
  under test; and a port per service a store may start (SERVICE_PORTS: PostgreSQL, an S3 server), where
  it reaches that. Each client connection is announced to the harness (`<id> <address> <port> <broker>`
  on the control connection, the service's name in place of a broker), which
  opens a data connection for it (`data <id>`) and from then on the relay copies bytes both ways. The
  gate's logic (framing, points, holds) stays in the harness: the relay only moves bytes.
- SERVICE_PORT, published: the harness's connections, each starting with one line: the run's secret,
  then what it is: `control`, `data <id>`, `files` (JSON lines on the checkpoint volume: `walk`,
  `read`, `write`), so that the checkpoint triggers are read through the engine, not from a host path,
  or `connect <host> <port>`: a tunnel to a port of one of the run's containers named on the command
  line (Kafka's direct listeners, toxiproxy's API and links), so that none of them is published.
  A connection without the secret is closed at once: whoever else reaches the published port can neither
  steer the run (replace its control, claim a client) nor read or write its files, nor hold the relay's
  memory (FIRST_LINE_S, UNAUTHENTICATED_MAX). Client ids are random.
  A walk, read or write follows no symbolic link a client may have planted (a read takes regular files
  only), and a file is read or written in a folder of the volume, never at its root.

    HARNESS_RUN_SECRET=... python3 -m harness.gate.relay [BROKERS [TARGET_HOST ...]]
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hmac
import json
import os
import secrets
import socket
import stat
import sys

CLIENT_PORT = 9092
# a service's client port, by the name its clients' announcements give in place of a broker (the gate names
# the peer so: harness.gate.points.Peer.service)
SERVICE_PORTS = {"postgres": 5432, "s3": 7070, "catalog": 8181}
SERVICE_PORT = 9000
ROOT = "/checkpoints"  # the run's checkpoint volume; files outside it are refused
CHUNK = 65536
LINE_LIMIT = 2**20  # the longest line the service port reads: a file written through it is base64 in one line
# The largest file the relay reads for the harness: Spark's checkpoint files and a table's log entries are
# kilobytes, its data files megabytes. What the sink writes past it is refused, never read whole into memory.
MAX_READ = 256 * 2**20
REPLY_LIMIT = MAX_READ // 3 * 4 + 2**16  # a read's reply line: the file in base64, and its JSON around it
READY = "HARNESS-RELAY-READY"
UNCLAIMED_S = 30.0  # a client the harness has not claimed by then is closed
# A service connection says the secret in its first line, which the harness sends as it connects: one that has
# not said it within FIRST_LINE_S is closed, and no more than UNAUTHENTICATED_MAX wait for theirs at once (more
# are closed at once). Each holds up to twice LINE_LIMIT of unread bytes: without them, whoever reaches the
# published port held a megabyte per connection for as long as it liked (300 connections held 338 MiB).
FIRST_LINE_S = 10.0
UNAUTHENTICATED_MAX = 64
SECRET_ENV = "HARNESS_RUN_SECRET"


def keep_alive(sock: socket.socket | None) -> None:
    """TCP keepalive after 30 s idle, every 10 s, 6 probes: a control or reaper connection idles for
    minutes, and a NAT or firewall entry dropped meanwhile must end it, not leave it hanging."""
    if sock is None:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 6)):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


class Relay:
    """Client connections waiting for the harness, and the one control connection announcing them."""

    def __init__(self, secret: str, targets: tuple[str, ...] = ()) -> None:
        if not secret:
            raise ValueError(f"the relay needs the run's secret ({SECRET_ENV})")
        self.secret = secret
        self.targets = targets  # the hosts a `connect` may reach: the run's own containers, nothing else
        self.waiting: dict[str, tuple[asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self.control: asyncio.StreamWriter | None = None
        # service connections whose first line has not come yet, oldest first
        self.unauthenticated: dict[asyncio.StreamWriter, None] = {}

    async def on_client(self, broker: int | str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.control is None:  # no harness: nobody can route this client
            writer.close()
            return
        number = secrets.token_hex(8)  # not guessable: only the harness, told on control, claims it
        address, port = writer.get_extra_info("peername")[:2]
        self.waiting[number] = (reader, writer)
        self.control.write(f"{number} {address} {port} {broker}\n".encode())
        await asyncio.sleep(UNCLAIMED_S)
        if self.waiting.pop(number, None) is not None:
            writer.close()

    async def first_line(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> list[str]:
        """A service connection's first line, in words; none when it does not come whole within FIRST_LINE_S
        and LINE_LIMIT. When UNAUTHENTICATED_MAX others wait for theirs, the oldest of them is closed: the
        harness says its line as it connects, so strangers who hold connections silent cannot keep it out."""
        if len(self.unauthenticated) >= UNAUTHENTICATED_MAX:
            oldest = next(iter(self.unauthenticated))
            del self.unauthenticated[oldest]
            oldest.close()
        self.unauthenticated[writer] = None
        try:
            line = await asyncio.wait_for(reader.readline(), FIRST_LINE_S)
        except (TimeoutError, ValueError, ConnectionError):  # ValueError: a line over LINE_LIMIT
            return []
        finally:
            self.unauthenticated.pop(writer, None)
        return line.decode(errors="replace").split()

    async def on_service(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        words = await self.first_line(reader, writer)
        if not words or not hmac.compare_digest(words[0].encode(), self.secret.encode()):
            writer.close()  # not the harness of this run
            return
        line = words[1:]
        keep_alive(writer.get_extra_info("socket"))
        if line == ["control"]:
            await self.serve_control(reader, writer)
        elif len(line) == 2 and line[0] == "data":
            client = self.waiting.pop(line[1], None)
            if client is None:
                writer.close()
                return
            await splice(client, (reader, writer))
        elif line == ["files"]:
            await serve_files(reader, writer)
        elif len(line) == 3 and line[0] == "connect" and line[1] in self.targets and line[2].isdigit():
            await self.serve_tunnel(reader, writer, line[1], int(line[2]))
        else:
            writer.close()

    async def serve_tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str,
                           port: int) -> None:
        """Copy bytes between the harness and `host:port` on the run's network; an unreachable target is
        a closed connection, as a refused one would be."""
        try:
            upstream = await asyncio.open_connection(host, port, limit=LINE_LIMIT)
        except OSError:
            writer.close()
            return
        await splice((reader, writer), upstream)

    async def serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One harness at a time (a reconnection with the secret replaces the old control); when it goes,
        the clients waiting for it go too."""
        if self.control is not None:
            self.control.close()
        self.control = writer
        writer.write(b"ready\n")
        await reader.read()  # until the harness closes it
        if self.control is writer:
            self.control = None
            for _, client in self.waiting.values():
                client.close()
            self.waiting.clear()
        writer.close()


async def splice(one: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                 other: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    """Copy both ways until either side ends; then close both (the gate's drop is a closed connection)."""

    async def copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()

    pumps = [asyncio.ensure_future(copy(one[0], other[1])), asyncio.ensure_future(copy(other[0], one[1]))]
    try:
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pump in pumps:
            pump.cancel()
        one[1].close()
        other[1].close()


def file_request(request: dict) -> dict:
    """One operation on the checkpoint volume."""
    if request["op"] == "walk":  # every file under path, relative to it (none when it does not exist)
        return {"files": walk_folder(request["path"])}
    if request["op"] == "tree":  # every folder (an empty one too) and every file under path, in one walk
        folders, files = walk_tree(request["path"])
        return {"folders": folders, "files": files}
    if request["op"] == "read":
        return {"data": base64.b64encode(read_file(request["path"])).decode()}
    if request["op"] == "mtime":  # when a file was last written, in unix seconds (the harness's clock too)
        return {"mtime": modified_at(request["path"])}
    if request["op"] == "write":
        write_file(request["path"], base64.b64decode(request["data"]))
        return {}
    raise ValueError(f"unknown operation {request['op']!r}")


def parts_under_root(path: str) -> list[str]:
    """The parts of `path` under ROOT, read as written (no link resolved); ValueError for a path outside it."""
    relative = os.path.relpath(os.path.normpath(path), ROOT) if os.path.isabs(path) else ".."
    if relative.split(os.sep)[0] == "..":
        raise ValueError(f"{path} is outside {ROOT}")
    return [] if relative == "." else relative.split(os.sep)


def folders_and_name(path: str) -> tuple[list[str], str]:
    """The folders under ROOT and the file name of `path`, read as written (no link resolved); ValueError
    for a path outside ROOT or a file at its root (where nothing of a run belongs)."""
    parts = parts_under_root(path)
    if not parts:
        raise ValueError(f"{path} is outside {ROOT}")
    if len(parts) == 1:
        raise ValueError(f"{path} is at the root of {ROOT}: files go in a folder of it")
    return parts[:-1], parts[-1]


def open_folder(folders: list[str], make: bool = False) -> int:
    """A descriptor of the folder `folders` name under ROOT, each opened with O_NOFOLLOW below the one before
    (made when missing, with `make`): a link planted on the way is refused, never followed, and nothing swapped
    in after a check is reached (a path checked first, then opened again by name, could be)."""
    folder = os.open(ROOT, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in folders:
            if make:
                try:
                    os.mkdir(part, dir_fd=folder)
                except FileExistsError:
                    pass
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder


def walk_folder(path: str) -> list[str]:
    """Every file under the folder `path`, relative to it, following no link (none when it does not exist)."""
    return walk_tree(path)[1]


def walk_tree(path: str) -> tuple[list[str], list[str]]:
    """Every folder and every file under the folder `path`, relative to it, from one walk following no link
    (none when it does not exist)."""
    try:
        folder = open_folder(parts_under_root(path))
    except FileNotFoundError:
        return [], []
    folders: list[str] = []
    files: list[str] = []
    try:
        for top, inner, names, _ in os.fwalk(dir_fd=folder):
            folders += [os.path.normpath(os.path.join(top, name)) for name in inner]
            files += [os.path.normpath(os.path.join(top, name)) for name in names]
        return folders, files
    finally:
        os.close(folder)


def read_file(path: str) -> bytes:
    """A file whole, following no symbolic link (a folder or the name planted as one is refused), and only a
    regular file: a FIFO planted there would block the relay's every connection."""
    folders, name = folders_and_name(path)
    folder = open_folder(folders)
    try:
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(file, "rb") as opened:
        status = os.fstat(file)
        if not stat.S_ISREG(status.st_mode):
            raise ValueError(f"{path} is not a regular file: refused")
        data = opened.read(MAX_READ + 1) if status.st_size <= MAX_READ else b""
        if status.st_size > MAX_READ or len(data) > MAX_READ:  # too big, or grown past the limit since its stat
            raise ValueError(f"{path} is {max(status.st_size, len(data)):,} bytes, over the relay's limit of "
                             f"{MAX_READ:,}: refused")
        return data


def modified_at(path: str) -> float:
    """A file's modification time (unix seconds), following no symbolic link."""
    folders, name = folders_and_name(path)
    folder = open_folder(folders)
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime
    finally:
        os.close(folder)


def write_file(path: str, data: bytes) -> None:
    """Write `path` whole or not at all (a reader that polls never sees half a file), following no
    symbolic link: each folder is opened with O_NOFOLLOW (made when missing), `<name>.part` is created
    anew beside the name (refused when it is a link), then renamed over the name (a link there is
    replaced, never followed)."""
    folders, name = folders_and_name(path)
    folder = open_folder(folders, make=True)
    try:
        staged = name + ".part"
        try:
            if stat.S_ISLNK(os.lstat(staged, dir_fd=folder).st_mode):
                raise ValueError(f"{path}.part is a symbolic link: refused")
            os.unlink(staged, dir_fd=folder)  # a crashed write's leftover
        except FileNotFoundError:
            pass
        file = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        with os.fdopen(file, "wb") as written:
            written.write(data)
        os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(folder)


async def serve_files(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while line := await reader.readline():
        try:
            reply = await asyncio.to_thread(file_request, json.loads(line))  # off the loop every link shares
        except (OSError, ValueError, KeyError) as error:
            reply = {"error": f"{type(error).__name__}: {error}"}
        writer.write(json.dumps(reply).encode() + b"\n")
        await writer.drain()
    writer.close()


async def listen(secret: str, host: str = "0.0.0.0", client_ports: tuple[int, ...] = (CLIENT_PORT,),
                 service_port: int = SERVICE_PORT, targets: tuple[str, ...] = (),
                 service_ports: dict[str, int] | None = None, service_host: str | None = None) -> list[asyncio.Server]:
    """A client server per broker (the nth port for broker n), one per service (`service_ports`), then the
    service server, listening (on `service_host` where given: the infrastructure's address only)."""
    relay = Relay(secret, targets)
    servers = [await asyncio.start_server(functools.partial(relay.on_client, n), host, port, limit=LINE_LIMIT)
               for n, port in enumerate(client_ports, 1)]
    for name, port in (service_ports or {}).items():
        servers.append(await asyncio.start_server(functools.partial(relay.on_client, name), host, port,
                                                  limit=LINE_LIMIT))
    servers.append(await asyncio.start_server(relay.on_service, service_host or host, service_port, limit=LINE_LIMIT))
    return servers


async def main(brokers: int, targets: tuple[str, ...]) -> None:
    # started on the infrastructure's network alone (harness.cluster.topology attaches the system under test's
    # after): its address then is the one the service port is bound to, out of the system under test's reach
    servers = await listen(os.environ.get(SECRET_ENV, ""), client_ports=tuple(CLIENT_PORT + n for n in range(brokers)),
                           targets=targets, service_ports=SERVICE_PORTS,
                           service_host=socket.gethostbyname(socket.gethostname()))
    print(READY, flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    os.makedirs(ROOT, exist_ok=True)
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, tuple(sys.argv[2:]))))
