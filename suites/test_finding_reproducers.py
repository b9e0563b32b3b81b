"""The harness's own findings, shown every time rather than when chance allows: each finding's reproducer,
which needs neither the harness nor a fault, run in the Spark image of each release the harness offers for
it. A reproducer exits 1 where the bug shows; the day a release fixes it, it exits 0 and its test here fails,
so the finding's page can say which releases carry it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from harness import versions
from harness.cluster import images
from harness.cluster.engine import docker_client
from harness.cluster.labels import labels, new_run_id

pytestmark = [pytest.mark.chaos, pytest.mark.finding]
FINDINGS = Path(__file__).resolve().parents[1] / "docs" / "findings"
ICEBERG_REPLAY = FINDINGS / "iceberg-streaming-replay-overwrites-a-committed-file" / "reproduce.py"
RUN_TIMEOUT_S = 300
# every Iceberg release the harness knows, on each Spark line that offers it
ICEBERG_RELEASES = [(line, iceberg) for line, releases in versions.ICEBERG_VERSIONS.items() for iceberg in releases]


def reproduce(script: Path, image: str) -> tuple[int, str]:
    """`script` run by the image's Python in a container with only its loopback (copied in, not mounted: the engine
    may be elsewhere; labelled as a run's, so that a sweep removes it if this process dies first); its exit
    status and its standard output."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        tar.add(script, arcname=script.name)
    container = docker_client().containers.create(image, ["python3", f"/tmp/{script.name}"], network_mode="none",
                                                  hostname="localhost", labels=labels(new_run_id()))
    try:
        container.put_archive("/tmp", archive.getvalue())
        container.start()
        status = container.wait(timeout=RUN_TIMEOUT_S)["StatusCode"]
        said = container.logs(stdout=True, stderr=False).decode(errors="replace")
        if not said.strip():  # it ended before its first line: its error is all there is to show
            said = container.logs(stdout=False, stderr=True).decode(errors="replace")[-3000:]
        return status, said
    finally:
        container.remove(force=True)


@pytest.mark.parametrize(("line", "iceberg"), ICEBERG_RELEASES,
                         ids=[f"spark{line}-iceberg{iceberg}" for line, iceberg in ICEBERG_RELEASES])
def test_iceberg_a_replayed_epoch_s_file_takes_a_committed_file_s_path_and_its_rows(line: str, iceberg: str) -> None:
    """docs/findings/iceberg-streaming-replay-overwrites-a-committed-file.md: Iceberg's streaming writer factory,
    asked again for the same partition, task id, query id and epoch, names the replay's file as the committed
    one, and a reader gets the replay's rows where the committed ones were."""
    image = images.needed(images.current(versions.stack(line, iceberg)).spark)
    status, said = reproduce(ICEBERG_REPLAY, image)
    assert status == 1, f"exit {status}: the bug no longer shows with Iceberg {iceberg} on Spark {line}\n{said}"
    assert "the same path twice:" in said and "verdict: bug present" in said, said
