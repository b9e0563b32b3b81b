"""A script interrupted (Ctrl-C, or SIGTERM from a timeout) ends with one line and status 130, not a
traceback; its `with` blocks have run on the way out."""

import pytest

from harness.interrupt import run_script

pytestmark = pytest.mark.unit


def test_an_interrupted_script_ends_with_one_line_and_status_130(capsys: pytest.CaptureFixture[str]) -> None:
    removed = []

    def main() -> None:
        try:
            raise KeyboardInterrupt
        finally:
            removed.append("cluster")

    with pytest.raises(SystemExit) as ended:
        run_script(main)
    assert ended.value.code == 130 and removed == ["cluster"]
    assert capsys.readouterr().err.strip() == "interrupted: what the run started has been removed"


def test_a_script_that_returns_ends_with_its_status() -> None:
    with pytest.raises(SystemExit) as ended:
        run_script(lambda: None)
    assert not ended.value.code
