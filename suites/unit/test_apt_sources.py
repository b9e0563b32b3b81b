"""The images' Debian archive: the settings when given, else a Debian archive among the host's apt sources,
told from Ubuntu's and vendors' by its suites, components and keyring (harness.cluster.apt_sources), never
by its host name; a host with none is told what to set. The URLs here are made up or loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import versions
from harness.cluster import apt_sources, fetch
from harness.errors import ImageBuildFailed
from harness.settings import SETTINGS

pytestmark = pytest.mark.unit

BOOKWORM = """Types: deb
URIs: http://mirror.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
TRIXIE = """Types: deb deb-src
URIs: http://mirror.invalid/debian/
Suites: trixie trixie-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp

Types: deb deb-src
URIs: http://mirror.invalid/debian-security/
Suites: trixie-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp
"""
NOBLE = """Types: deb
URIs: http://azure.archive.invalid/ubuntu/
Suites: noble noble-updates noble-backports
Components: main universe restricted multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg

Types: deb
URIs: http://azure.archive.invalid/ubuntu/
Suites: noble-security
Components: main universe restricted multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
"""
NOBLE_ONE_LINE = """# Ubuntu's sources.list, one line each
deb http://archive.invalid/ubuntu/ noble main restricted
deb http://archive.invalid/ubuntu/ noble-updates main restricted
deb http://security.invalid/ubuntu/ noble-security main restricted
"""
PROXY_ONE_LINE = """# a Debian host behind apt-cacher-ng
deb http://127.0.0.1:3142/debian bookworm main contrib
deb-src http://127.0.0.1:3142/debian bookworm main
deb http://127.0.0.1:3142/debian bookworm-updates main
deb http://127.0.0.1:3142/debian-security bookworm-security main
"""
VENDORS = """Types: deb
URIs: https://vendor.invalid/linux/debian
Suites: bookworm
Components: stable
Signed-By: /etc/apt/keyrings/vendor.asc

Types: deb
URIs: https://other-vendor.invalid/apt
Suites: bookworm
Components: main
Signed-By: /etc/apt/keyrings/other-vendor.gpg

Types: deb
URIs: http://disabled.invalid/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb-src
URIs: http://sources-only.invalid/debian
Suites: bookworm
Components: main
"""


@pytest.fixture(autouse=True)
def _no_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("debian_mirror", "debian_security_mirror"):
        monkeypatch.delenv(SETTINGS[name].env, raising=False)


def _files(tmp_path: Path, **texts: str) -> list[str]:
    paths = []
    for name, text in texts.items():
        path = tmp_path / name.replace("_", ".")
        path.write_text(text)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(("text", "mirror", "security"), [
    (BOOKWORM, "http://mirror.invalid/debian", "http://mirror.invalid/debian-security"),
    (TRIXIE, "http://mirror.invalid/debian/", "http://mirror.invalid/debian-security/"),
    (PROXY_ONE_LINE, "http://127.0.0.1:3142/debian", "http://127.0.0.1:3142/debian-security"),
], ids=["bookworm-deb822", "trixie-deb822", "proxy-one-line"])
def test_a_debian_host_s_archives_are_read_from_its_apt_sources(tmp_path: Path, text: str, mirror: str,
                                                                security: str) -> None:
    paths = _files(tmp_path, sources=text)
    assert apt_sources.debian_mirror(paths) == mirror
    assert apt_sources.debian_security_mirror(paths) == security


@pytest.mark.parametrize("text", [NOBLE, NOBLE_ONE_LINE, VENDORS], ids=["noble-deb822", "noble-one-line", "vendors"])
def test_ubuntu_s_archive_and_vendors_are_not_taken_for_debian_s(tmp_path: Path, text: str) -> None:
    paths = _files(tmp_path, sources=text)
    with pytest.raises(ImageBuildFailed, match="HARNESS_DEBIAN_MIRROR.*HARNESS_REGISTRY"):
        apt_sources.debian_mirror(paths)
    assert apt_sources.debian_security_mirror(paths) is None


def test_debian_s_archive_is_found_beside_a_vendor_s_that_comes_first(tmp_path: Path) -> None:
    paths = _files(tmp_path, a_sources=VENDORS, b_sources=BOOKWORM)
    assert apt_sources.debian_mirror(paths) == "http://mirror.invalid/debian"


def test_the_settings_win_over_the_host_s_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path, sources=BOOKWORM)
    monkeypatch.setenv("HARNESS_DEBIAN_MIRROR", "http://127.0.0.1:3142/debian")
    assert apt_sources.debian_mirror(paths) == "http://127.0.0.1:3142/debian"
    assert apt_sources.debian_security_mirror(paths) == "http://mirror.invalid/debian-security"  # the host's
    monkeypatch.setenv("HARNESS_DEBIAN_SECURITY_MIRROR", "http://127.0.0.1:3142/debian-security")
    assert apt_sources.debian_archive(True, paths) == ("http://127.0.0.1:3142/debian-security",
                                                       "HARNESS_DEBIAN_SECURITY_MIRROR")


def test_on_an_ubuntu_host_the_setting_names_the_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path, sources=NOBLE)
    monkeypatch.setenv("HARNESS_DEBIAN_MIRROR", "http://127.0.0.1:3142/debian")
    assert apt_sources.debian_mirror(paths) == "http://127.0.0.1:3142/debian"
    assert apt_sources.debian_security_mirror(paths) is None  # Ubuntu's security archive is not Debian's


@pytest.mark.parametrize("bad", ["mirror.invalid/debian", "http://", "http://a b"])
def test_a_mirror_setting_that_is_no_url_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="archive's URL"):
        SETTINGS["debian_mirror"].type(bad)
    assert SETTINGS["debian_mirror"].type("") == ""  # not given


def test_doctor_says_which_mirror_and_where_it_was_named_or_what_to_set(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    monkeypatch.setattr(apt_sources, "host_sources", lambda: _files(tmp_path, sources=NOBLE))
    assert apt_sources.doctor_line().startswith("none: ") and "HARNESS_REGISTRY" in apt_sources.doctor_line()
    assert apt_sources.lacks() == ["a Debian mirror (HARNESS_DEBIAN_MIRROR)"]
    monkeypatch.setenv("HARNESS_DEBIAN_MIRROR", "http://127.0.0.1:3142/debian")
    line = apt_sources.doctor_line()
    assert line.startswith("http://127.0.0.1:3142/debian (from HARNESS_DEBIAN_MIRROR); no security archive")
    assert apt_sources.lacks() == []


def test_the_release_is_checked_with_debian_s_keyring_where_the_host_has_it(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    keyring = tmp_path / "debian-archive-keyring.gpg"
    monkeypatch.setattr(apt_sources, "KEYRING", keyring)
    assert apt_sources.keyring_options() == []
    keyring.write_bytes(b"")
    assert apt_sources.keyring_options() == [f"--keyring={keyring}"]


def test_postgresql_s_packages_come_from_debian_s_archive_not_the_host_s_apt(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """An apt of its own: the host's (Ubuntu's, or another Debian release's) lacks the images' postgresql-15."""
    monkeypatch.setattr(apt_sources, "host_sources", lambda: _files(tmp_path, sources=NOBLE))
    monkeypatch.setattr(apt_sources, "KEYRING", tmp_path / "debian-archive-keyring.gpg")
    apt_sources.KEYRING.write_bytes(b"")
    monkeypatch.setenv("HARNESS_DEBIAN_MIRROR", "http://127.0.0.1:3142/debian")
    own = tmp_path / "cache" / "apt"
    options = fetch._debian_apt(tmp_path / "cache")
    signed = f"[signed-by={apt_sources.KEYRING}]"
    assert (own / "sources.list").read_text() == (f"deb {signed} http://127.0.0.1:3142/debian {versions.DEBIAN_SUITE} "
                                                  f"main\ndeb {signed} http://127.0.0.1:3142/debian "
                                                  f"{versions.DEBIAN_SUITE}-updates main\n")
    assert f"-o=Dir::Etc::SourceList={own / 'sources.list'}" in options
    assert f"-o=Dir::State::Lists={own / 'lists'}" in options
    parts = next(option.split("=", 2)[2] for option in options if option.startswith("-o=Dir::Etc::SourceParts="))
    assert not any(Path(parts).iterdir())  # none of the host's source files
