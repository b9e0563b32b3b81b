"""Which Debian archive the images' build downloads from: the `debian_mirror` and `debian_security_mirror`
settings when given, else the Debian archives among the host's own apt sources (never a constant here).

A host's apt sources need not be Debian's: GitHub's `ubuntu-latest` names Ubuntu's archive, and a Debian host
may name Docker's or a vendor's beside Debian's. A source counts as a Debian archive when
  - it is a binary source (`deb`, not disabled) with the `main` component, and
  - every suite it names is a Debian codename or alias (bookworm, trixie, sid, stable, ...), alone or with a
    Debian suffix (-updates, -security, -backports, -proposed-updates), and
  - its Signed-By, when it has one, is a Debian archive keyring (a file named debian-archive-*).
Its URI is not judged, so a local proxy (http://127.0.0.1:3142/debian) counts as the archive it serves. A
Debian archive that fails the rule (its keyring under another name), or a vendor's that passes it (suite
`stable`, component `main`, no Signed-By) in a file read before Debian's, is set right with the settings.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path

from harness import versions
from harness.errors import ImageBuildFailed
from harness.settings import SETTINGS, from_environment

CODENAMES = frozenset((
    "buzz rex bo hamm slink potato woody sarge etch lenny squeeze wheezy jessie stretch buster bullseye bookworm "
    "trixie forky duke sid experimental oldoldstable oldstable stable testing unstable").split())
SUFFIXES = ("-updates", "-security", "-backports", "-backports-sloppy", "-proposed-updates")
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # debian-archive-keyring's: Debian's release keys


@dataclass(frozen=True)
class Source:
    """One apt source (a deb822 stanza or a one-line entry): what the rule above reads of it."""

    path: str
    uri: str
    suites: tuple[str, ...]
    components: tuple[str, ...]
    signed_by: str | None = None  # a keyring's path; "" for a key written inline

    @property
    def debian(self) -> bool:
        """Whether it is a Debian archive, by the rule of this module's docstring."""
        return ("main" in self.components and bool(self.suites)
                and all(_debian_suite(suite) for suite in self.suites)
                and (self.signed_by is None or Path(self.signed_by).name.startswith("debian-archive-")))

    def serves(self, security: bool) -> bool:
        """Whether it names a security suite (`security`), or one that is not."""
        return any(suite.endswith("-security") == security for suite in self.suites)


def _debian_suite(suite: str) -> bool:
    base = next((suite.removesuffix(s) for s in SUFFIXES if suite.endswith(s)), suite)
    return base in CODENAMES


def host_sources() -> list[str]:
    """The host's apt source files, deb822 ones first."""
    return sorted(glob.glob("/etc/apt/sources.list.d/*.sources")) + ["/etc/apt/sources.list"]


def read_sources(paths: list[str]) -> list[Source]:
    """Every binary source in `paths` (deb822 `.sources` stanzas, or one-line `deb` entries), in order."""
    found = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):  # deb822: one source per paragraph
            fields = {key.lower(): value.strip() for key, value in re.findall(r"^([\w-]+):(.*)$", stanza, re.M)}
            if ("deb" in fields.get("types", "").split() and fields.get("uris")
                    and fields.get("enabled", "yes").lower() != "no"):
                found.append(Source(path, fields["uris"].split()[0], tuple(fields.get("suites", "").split()),
                                    tuple(fields.get("components", "").split()), fields.get("signed-by")))
        for line in text.splitlines():  # one-line style: deb [options] URI SUITE COMPONENTS
            match = re.match(r"\s*deb\s+(?:\[([^]]*)\]\s+)?(\S+)\s+(\S+)((?:\s+[^\s#]+)*)", line)
            if match:
                options = dict(re.findall(r"([\w-]+)=(\S+)", match.group(1) or ""))
                found.append(Source(path, match.group(2), (match.group(3),), tuple(match.group(4).split()),
                                    options.get("signed-by")))
    return found


def debian_archive(security: bool, paths: list[str] | None = None) -> tuple[str, str] | None:
    """The Debian archive (`security`: its security archive) and where it was named: the setting's
    environment variable, else the host's apt source file; None when neither names one."""
    setting = SETTINGS["debian_security_mirror" if security else "debian_mirror"]
    given = from_environment(setting.name)
    if given:
        return given, setting.env
    for source in read_sources(host_sources() if paths is None else paths):
        if source.debian and source.serves(security):
            return source.uri, source.path
    return None


def debian_mirror(paths: list[str] | None = None) -> str:
    """The Debian archive the images are built from; ImageBuildFailed, saying what to set, when there is none."""
    found = debian_archive(False, paths)
    if found is None:
        raise ImageBuildFailed(f"no Debian archive to build the images from: {missing()}")
    return found[0]


def debian_security_mirror(paths: list[str] | None = None) -> str | None:
    """Debian's security archive the base image takes its updates from, None when none is named."""
    found = debian_archive(True, paths)
    return found[0] if found else None


def missing() -> str:
    """What to do on a host whose apt names no Debian archive."""
    return (f"the host's apt sources name none (an Ubuntu host's are Ubuntu's): set "
            f"{SETTINGS['debian_mirror'].env} to a Debian mirror's URL (and {SETTINGS['debian_security_mirror'].env} "
            f"to its security archive's), or take the images from a registry ({SETTINGS['registry'].env})")


def lacks() -> list[str]:
    """What a build that downloads from Debian lacks: a Debian archive, when none is named."""
    return [] if debian_archive(False) else [f"a Debian mirror ({SETTINGS['debian_mirror'].env})"]


def doctor_line() -> str:
    """`doctor`'s line: the archives the build takes and where each was named, or what to set."""
    mirror, security = debian_archive(False), debian_archive(True)
    if mirror is None:
        return f"none: {missing()}"
    if security is None:
        return (f"{mirror[0]} (from {mirror[1]}); no security archive: the base image gets no security updates "
                f"({SETTINGS['debian_security_mirror'].env})")
    return f"{mirror[0]} (from {mirror[1]}); security: {security[0]} (from {security[1]})"


def release_sources(mirror: str, security: str | None, suite: str = versions.DEBIAN_SUITE, options: str = "") -> str:
    """A sources.list of `suite` and its updates from `mirror`, and its security archive (`options`: apt's
    `[key=value]` for each line)."""
    lines = [f"deb {options}{mirror} {suite} main", f"deb {options}{mirror} {suite}-updates main"]
    if security is not None:
        lines.append(f"deb {options}{security} {suite}-security main")
    return "\n".join(lines) + "\n"


def keyring_options() -> list[str]:
    """debootstrap's and mmdebstrap's option that checks the release with Debian's own keys, where this host
    has them: an Ubuntu host's apt trusts Ubuntu's keys alone."""
    return [f"--keyring={KEYRING}"] if KEYRING.is_file() else []
