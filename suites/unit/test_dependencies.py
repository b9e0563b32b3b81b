"""What ships with a sink: its packages, jars and Spark settings, given as spark-submit takes them, checked
before anything starts, and listed on the certificate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.certify.certificate import _dependencies
from harness.cli import main, parser
from harness.cluster.spark import SOURCE, Submit
from harness.errors import EXIT_BAD_INPUT, BadInput
from harness.subject import bundle
from harness.subject.dependencies import Dependencies, check_not_owned, dependencies, from_settings

pytestmark = pytest.mark.unit


def test_each_kind_is_read_as_spark_submit_and_pip_take_it(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# pinned\norjson==3.10.7  # the codec\n\nfastavro>=1.9\n")
    given = dependencies("pydantic>=2,<3", str(requirements), "org.apache.spark:spark-avro_2.13:4.0.0,a:b:1",
                         "spark.sql.parquet.compression.codec=zstd\nspark.sql.session.timeZone = UTC")
    assert given == Dependencies(("pydantic<3,>=2", "orjson==3.10.7", "fastavro>=1.9"),
                                 ("org.apache.spark:spark-avro_2.13:4.0.0", "a:b:1"),
                                 (("spark.sql.parquet.compression.codec", "zstd"),
                                  ("spark.sql.session.timeZone", "UTC")))
    assert not dependencies() and given


def test_a_pyproject_ships_its_project_dependencies(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "x"\ndependencies = ["orjson>=3.9", "requests"]\n')
    assert dependencies(requirements=str(project)).python == ("orjson>=3.9", "requests")
    project.write_text('[project]\nname = "x"\ndynamic = ["dependencies"]\n')
    with pytest.raises(BadInput, match="dynamic"):
        dependencies(requirements=str(project))


@pytest.mark.parametrize(("given", "said"), [
    ({"packages": "spark-avro"}, "group:artifact:version"),
    ({"py_packages": "https://example.invalid/x.whl"}, "not a pip requirement"),
    ({"py_packages": "x@file:///tmp/x.whl"}, "a URL or path"),
    ({"requirements": "/no/such/requirements.txt"}, "no such file"),
    ({"conf": "spark.master=local[2]"}, "the harness sets it"),
    ({"conf": "spark.speculation.multiplier=3"}, "the harness sets it"),
    ({"conf": "spark.jars.packages=a:b:1"}, "--packages"),
    ({"conf": "spark.submit.pyFiles=x.zip"}, "--py-package"),
    ({"conf": "parquet=zstd"}, "spark.name=value"),
])
def test_bad_dependencies_are_named_before_anything_starts(given: dict[str, str], said: str) -> None:
    with pytest.raises(BadInput, match=said):
        dependencies(**given)


def test_a_requirements_file_with_pips_options_is_refused(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("orjson\n--index-url http://127.0.0.1:1/simple\n")
    with pytest.raises(BadInput, match="line 2 is pip's option --index-url"):
        dependencies(requirements=str(requirements))


def test_a_setting_the_output_sets_is_refused() -> None:
    check_not_owned("spark.sql.parquet.compression.codec", {"spark.sql.extensions": "x"}, "delta")
    with pytest.raises(BadInput, match="the delta output sets it"):
        check_not_owned("spark.sql.extensions", {"spark.sql.extensions": "x"}, "delta")


def test_the_flags_repeat_and_every_command_takes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CONF", "spark.a.b=from-environment")
    args = parser().parse_args(["certify", "--sink", "s", "--conf", "spark.x.y=1", "--conf", "spark.x.z=2",
                                "--py-package", "orjson", "--py-package", "fastavro", "--packages", "a:b:1"])
    assert from_settings(lambda name: getattr(args, name)) == Dependencies(
        ("orjson", "fastavro"), ("a:b:1",), (("spark.x.y", "1"), ("spark.x.z", "2")))
    assert parser().parse_args(["run"]).conf == "spark.a.b=from-environment"  # the environment's, unless given
    for command in (["run"], ["certify", "--sink", "s"], ["space"], ["explore", "--sink", "s"]):
        assert parser().parse_args([*command, "--packages", "a:b:1"]).packages == "a:b:1", command


def test_a_bad_dependency_exits_2_in_one_line_before_any_image(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.cluster.images.build_for", lambda *_: pytest.fail("an image was built"))
    assert main(["certify", "--sink", "transactional", "--quick", "--conf", "spark.master=local"]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err.strip()
    assert "spark.master" in error and len(error.splitlines()) == 1, error


def test_the_driver_gets_the_folder_on_both_paths_and_the_settings() -> None:
    submit = Submit("/opt/eo-deps/abc", (("spark.sql.parquet.compression.codec", "zstd"),))
    assert submit.python_path() == f"{SOURCE}:/opt/eo-deps/abc/python"
    assert submit.settings() == {"spark.sql.parquet.compression.codec": "zstd",
                                 "spark.driver.extraClassPath": "/opt/eo-deps/abc/jars/*",
                                 "spark.executor.extraClassPath": "/opt/eo-deps/abc/jars/*"}
    assert Submit().python_path() == SOURCE and Submit().settings() == {}


def test_jars_the_image_has_are_named_as_provided_not_shipped(tmp_path: Path) -> None:
    layout = tmp_path / "maven"
    for group, artifact, version in (("org/apache/spark", "spark-avro_2.13", "4.0.0"),
                                     ("org/tukaani", "xz", "1.10"), ("org/apache/spark", "spark-tags_2.13", "4.0.0")):
        folder = layout / group / artifact / version
        folder.mkdir(parents=True)
        (folder / f"{artifact}-{version}.jar").write_bytes(b"jar")
    shipped, provided = bundle._jars(layout, tmp_path / "jars", ["spark-tags_2.13-4.0.0.jar", "xz.jar"])
    assert [j["coordinate"] for j in shipped] == ["org.apache.spark:spark-avro_2.13:4.0.0"]
    assert (tmp_path / "jars" / "spark-avro_2.13-4.0.0.jar").is_file()
    assert provided == ["org.apache.spark:spark-tags_2.13:4.0.0 (the image has spark-tags_2.13-4.0.0.jar)",
                        "org.tukaani:xz:1.10 (the image has xz.jar)"]
    assert not bundle._same_artifact("spark-sql-kafka-0-10_2.13.jar", "spark-sql")


def test_the_certificate_lists_what_shipped() -> None:
    shipped = bundle.Bundle("d", wheels=({"name": "orjson", "version": "3.10.7", "file": "orjson.whl",
                                          "sha256": "ab"},),
                            jars=({"coordinate": "a:b:1", "file": "b-1.jar", "sha256": "cd"},),
                            provided=("pyspark 4.0.0",), conf=(("spark.x.y", "1"),)).to_dict()
    page = _dependencies(json.loads(json.dumps(shipped)))
    for said in ("orjson 3.10.7", "sha256 ab", "jar a:b:1", "provided by the image, not shipped: pyspark 4.0.0",
                 "spark.x.y=1"):
        assert said in page, said
    assert "none" in _dependencies({"python": [], "jars": [], "provided_by_image": [], "conf": {}})


def test_a_setting_sized_for_the_cluster_is_the_sink_s_to_give_and_the_guide_names_it() -> None:
    """The harness's tuning (harness.cluster.spark.TUNING) yields to a sink's --conf of the same key."""
    from harness.cluster.spark import TUNING

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "your-sink.md").read_text()
    for key in TUNING:
        assert dependencies(conf=f"{key}=64").conf == ((key, "64"),)  # not owned: given as asked
        assert f"`{key}`" in guide, key
