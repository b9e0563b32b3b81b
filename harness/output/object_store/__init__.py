"""Tables on object storage (`--store s3`): an S3 server in the run (harness.output.object_store.server), the
system under test reaching it through the gate, the harness reading it (harness.output.object_store.files)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.versions import VERSITYGW

if TYPE_CHECKING:
    from harness.versions import Stack


# Hadoop's S3A client for `s3a://` paths: hadoop-aws of the Hadoop release pyspark ships, per Spark line, with
# the AWS SDK's S3 modules in place of its 600 MB bundle (Netty and Apache's HTTP client are Spark's own)
HADOOP_AWS = {"4.0": "3.4.1", "4.1": "3.4.2"}
# the AWS SDK iceberg-aws-bundle carries unshaded, by Iceberg release: S3A's modules at that version, one
# version of each class on the path
AWS_SDK = {"1.12.0": "2.54.17", "1.11.0": "2.44.4", "1.10.1": "2.33.0"}


def s3a_jars(stack: Stack) -> tuple[str, ...]:
    """The jars S3A needs on this Spark line; none where it is not known to work."""
    hadoop = HADOOP_AWS.get(stack.line)
    if hadoop is None:
        return ()
    sdk = AWS_SDK[stack.iceberg or ""]
    return (f"org.apache.hadoop:hadoop-aws:{hadoop}!*:*",
            *(f"software.amazon.awssdk:{module}:{sdk}!io.netty:*!org.apache.httpcomponents:*" for module in
              ("s3", "s3-transfer-manager", "apache-client")))


def s3a_unsupported(stack: Stack) -> str | None:
    """Why a table cannot live on S3 through Hadoop's S3A client (`s3a://` paths, Delta's way) with these
    versions, else None: S3A is known on some Spark lines only. (Iceberg reaches S3 through its own S3FileIO,
    iceberg-aws-bundle, on every line it has a Spark runtime for.)"""
    if stack.line not in HADOOP_AWS:
        return (f"Spark {stack.spark}: no S3A client known for its line (known: "
                f"{', '.join(f'Spark {line}' for line in HADOOP_AWS)})")
    return None


def servers(where: str) -> dict[str, tuple[str, str]]:
    """The S3 server a table on `where` is kept by, as a store's versions name it: none on the volume."""
    return {"versitygw": ("versitygw (S3 server)", VERSITYGW)} if where == "s3" else {}
