"""`Service.output`: a command's output and exit status read through docker's exec, which now and then
loses the output (docker/docker-py#2042): a reply without the end mark is run again, never read as
"printed nothing". The container is a stand-in that replies as docker-py does."""

from __future__ import annotations

import pytest
from docker.models.containers import ExecResult

from harness.cluster.service import END_MARK, OUTPUT_ATTEMPTS, ROOT, Service

pytestmark = pytest.mark.unit


class LossyContainer:
    """Replies to exec_run like docker-py: the first `lose` replies come back empty."""

    def __init__(self, printed: str, status: int, lose: int) -> None:
        self.printed, self.status, self.lose = printed, status, lose
        self.calls: list[dict] = []

    def exec_run(self, cmd: list[str], environment: dict[str, str], user: str) -> ExecResult:
        assert user == ROOT, "the harness's commands run as root, whoever the container runs as"
        self.calls.append({"cmd": cmd, "environment": environment})
        if len(self.calls) <= self.lose:
            return ExecResult(0, b"")
        return ExecResult(0, f"{self.printed}\n{END_MARK} {self.status}\n".encode())


def service_with(container: LossyContainer) -> Service:
    service = Service.__new__(Service)  # no Docker: only `output` is exercised
    service.alias = "spark-worker-1"
    service.get_wrapped_container = lambda: container  # type: ignore[method-assign]
    return service


def test_output_and_status_of_the_command() -> None:
    container = LossyContainer("1410\n", 0, lose=0)
    assert service_with(container).output(["pgrep", "-f", "CoarseGrainedExecutorBackend"]) == (0, "1410\n")


def test_a_lost_reply_is_run_again_not_read_as_empty() -> None:
    container = LossyContainer("1410\n", 0, lose=2)
    assert service_with(container).output(["pgrep", "-f", "X"]) == (0, "1410\n")
    assert len(container.calls) == 3


def test_an_empty_output_with_its_mark_is_empty() -> None:
    container = LossyContainer("", 1, lose=0)
    assert service_with(container).output(["pgrep", "-f", "X"]) == (1, "")
    assert len(container.calls) == 1


def test_every_reply_lost_is_an_error_not_an_empty_list() -> None:
    container = LossyContainer("1410\n", 0, lose=OUTPUT_ATTEMPTS)
    with pytest.raises(RuntimeError, match="no output from pgrep in spark-worker-1"):
        service_with(container).output(["pgrep", "-f", "X"])


def test_the_command_is_not_in_the_shell_argv() -> None:
    """`pgrep -f PATTERN` must not find the shell that runs it: the command travels in the environment."""
    container = LossyContainer("", 1, lose=0)
    service_with(container).output(["pgrep", "-f", "CoarseGrainedExecutorBackend"])
    call = container.calls[0]
    assert not any("CoarseGrainedExecutorBackend" in part for part in call["cmd"])
    assert call["environment"]["EO_COMMAND"] == "pgrep -f CoarseGrainedExecutorBackend"
