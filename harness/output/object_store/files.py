"""A table's files on the run's S3 server, read as the table readers read the run's volume (walk, read): with
pyarrow's S3 client (the readers already use pyarrow), over the harness's own tunnel to the server, never
through the gate."""

from __future__ import annotations

from pyarrow import fs

REGION = "us-east-1"  # versitygw's default; a client must sign for it


class S3Files:
    """The bucket's objects as files: `<bucket>/<key>` is a path."""

    def __init__(self, endpoint: tuple[str, int], access_key: str, secret_key: str) -> None:
        self.s3 = fs.S3FileSystem(access_key=access_key, secret_key=secret_key, endpoint_override=f"{endpoint[0]}:"
                                  f"{endpoint[1]}", scheme="http", region=REGION, allow_bucket_creation=True,
                                  connect_timeout=5, request_timeout=30)

    def make_bucket(self, bucket: str) -> None:
        self.s3.create_dir(bucket)

    def walk(self, path: str) -> list[str]:
        """Every object under `path`, relative to it; none when there is none."""
        path = path.rstrip("/")
        found = self.s3.get_file_info(fs.FileSelector(path, recursive=True, allow_not_found=True))
        return sorted(info.path.removeprefix(path + "/") for info in found if info.type == fs.FileType.File)

    def read_bytes(self, path: str) -> bytes:
        with self.s3.open_input_stream(path) as stream:
            return stream.readall()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode()
