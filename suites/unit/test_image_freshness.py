"""The base image takes Debian's security updates: its apt sources name the release's updates and its
security archive (read from the host's own apt sources, never written here), and an image older than the
`image_max_age` setting, or than its parent, is built again."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster import apt_sources, images
from harness.settings import SETTINGS, from_environment

pytestmark = pytest.mark.unit

DAY = 86400.0


def test_the_security_archive_is_read_from_either_style_of_apt_source(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DEBIAN_SECURITY_MIRROR", raising=False)
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
                      "Components: main\n\nTypes: deb\nURIs: http://mirror.invalid/debian-security\n"
                      "Suites: bookworm-security\nComponents: main\n")
    one_line = tmp_path / "sources.list"
    one_line.write_text("deb http://mirror.invalid/debian bookworm main\n"
                        "deb [signed-by=/k/debian-archive-keyring.gpg] http://other.invalid/security "
                        "bookworm-security main\n")
    assert apt_sources.debian_security_mirror([str(deb822)]) == "http://mirror.invalid/debian-security"
    assert apt_sources.debian_security_mirror([str(one_line)]) == "http://other.invalid/security"
    assert apt_sources.debian_security_mirror([str(tmp_path / "missing.list")]) is None


def test_the_base_images_apt_sources_add_updates_and_security() -> None:
    lines = apt_sources.release_sources("http://m.invalid/debian", "http://m.invalid/debian-security",
                                        "bookworm").splitlines()
    assert lines == ["deb http://m.invalid/debian bookworm main", "deb http://m.invalid/debian bookworm-updates main",
                     "deb http://m.invalid/debian-security bookworm-security main"]
    assert "security" not in apt_sources.release_sources("http://m.invalid/debian", None, "bookworm")


@pytest.mark.parametrize(("age_days", "parent_age_days", "fresh"), [
    (1, None, True), (6.9, 7, True), (7.5, None, False), (1, 0.5, False), (30, 31, False)])
def test_an_image_older_than_the_setting_or_than_its_parent_is_built_again(age_days: float,
                                                                            parent_age_days: float | None,
                                                                            fresh: bool) -> None:
    now = 1_000 * DAY
    parent = None if parent_age_days is None else now - parent_age_days * DAY
    assert images.fresh(now - age_days * DAY, parent, now, 7) is fresh


def test_the_age_setting_defaults_to_a_week_and_refuses_what_would_never_or_always_rebuild(monkeypatch) -> None:
    monkeypatch.delenv(SETTINGS["image_max_age"].env, raising=False)
    assert from_environment("image_max_age") == 7
    for bad in ("0", "-1", "nan", "inf", "week"):
        with pytest.raises(ValueError):
            SETTINGS["image_max_age"].type(bad)
