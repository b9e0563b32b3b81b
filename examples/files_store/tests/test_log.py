"""The file sink log as Spark writes it: batches, compactions, deletions, and a log the sink forged."""

from __future__ import annotations

import json

import pytest
from eo_files.log import LogError, batches, files_at, history, parse

FOLDER = "/volume/s-files"


def log_file(*actions: tuple[str, str]) -> str:
    lines = [json.dumps({"path": f"file://{FOLDER}/{name}", "size": 1, "isDir": False, "modificationTime": 7,
                         "blockReplication": 1, "blockSize": 1, "action": action}) for action, name in actions]
    return "\n".join(["v1", *lines])


def test_a_compaction_is_read_over_the_batch_file_of_its_number_and_temporary_files_are_no_batch() -> None:
    assert batches(["0", "1", ".2.tmp", "9", "9.compact", "10", "x/11"]) == {0: "0", 1: "1", 9: "9.compact", 10: "10"}


def test_the_files_as_of_a_batch_are_its_compaction_s_and_the_actions_after_it() -> None:
    texts = {"0": log_file(("add", "a.parquet")), "1": log_file(("add", "b.parquet")),
             "1.compact": log_file(("add", "a.parquet"), ("add", "b.parquet")),
             "2": log_file(("add", "c.parquet"), ("delete", "a.parquet"))}
    log = {0: "0", 1: "1.compact", 2: "2"}
    assert sorted(files_at(log, 2, texts.__getitem__, FOLDER)) == [f"{FOLDER}/b.parquet", f"{FOLDER}/c.parquet"]
    assert sorted(files_at(log, 0, texts.__getitem__, FOLDER)) == [f"{FOLDER}/a.parquet"]


def test_the_history_reads_each_log_file_once_a_compaction_starting_the_files_again() -> None:
    texts = {"0": log_file(("add", "a.parquet")), "1.compact": log_file(("add", "b.parquet")),
             "2": log_file(("add", "c.parquet"))}
    read: list[str] = []

    def text_of(name: str) -> str:
        read.append(name)
        return texts[name]

    seen = [(batch, sorted(files)) for batch, files in history({0: "0", 1: "1.compact", 2: "2"}, text_of, FOLDER)]
    assert seen == [(0, [f"{FOLDER}/a.parquet"]), (1, [f"{FOLDER}/b.parquet"]),
                    (2, [f"{FOLDER}/b.parquet", f"{FOLDER}/c.parquet"])]
    assert read == ["0", "1.compact", "2"]


@pytest.mark.parametrize("text", ["v2\n{}", "v1\nnot json", "v1\n" + json.dumps({"path": "file:///etc/passwd",
                                                                                   "action": "add"}),
                                  "v1\n" + json.dumps({"path": f"file://{FOLDER}/../x", "action": "add"}),
                                  "v1\n" + json.dumps({"path": f"file://{FOLDER}/a", "action": "rename"})])
def test_a_log_file_that_is_not_spark_s_or_names_a_file_elsewhere_is_refused(text: str) -> None:
    with pytest.raises(LogError):
        parse(text, FOLDER)
