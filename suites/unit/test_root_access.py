"""The way the base image's root file system gets root: root as it is, else passwordless sudo, else an
unprivileged mmdebstrap in a user namespace, else none with the reason; what each way makes a build take,
and what `images` and `doctor` say a host lacks."""

from __future__ import annotations

import pytest

from harness.cluster import images, root_access
from harness.cluster.readiness import Readiness
from harness.cluster.root_access import NONE, ROOT, SUDO, UNSHARE, RootAccess, choose, unshare_problem

pytestmark = pytest.mark.unit

SUBIDS = {"/etc/subuid": "runner:100000:65536\n", "/etc/subgid": "runner:100000:65536\n"}
ALL_TOOLS = {"mmdebstrap": "/usr/bin/mmdebstrap", "newuidmap": "/usr/bin/newuidmap", "newgidmap": "/usr/bin/newgidmap"}


def test_root_takes_debootstrap_directly_whatever_else_the_host_has() -> None:
    access = choose(0, sudo_works=True, unshare_problem=None)
    assert (access.way, access.prefix, access.tools) == (ROOT, [], ("debootstrap",))


def test_a_user_with_passwordless_sudo_runs_debootstrap_and_chroot_through_sudo_n() -> None:
    access = choose(1001, sudo_works=True, unshare_problem="mmdebstrap not installed")
    assert (access.way, access.prefix, access.tools) == (SUDO, ["sudo", "-n"], ("debootstrap",))
    assert access.possible and access.lacks() == []


def test_without_sudo_a_user_builds_unprivileged_with_mmdebstrap() -> None:
    access = choose(1001, sudo_works=False, unshare_problem=None)
    assert (access.way, access.prefix, access.tools) == (UNSHARE, [], ("mmdebstrap",))


def test_with_no_way_the_reason_is_said_and_counted_as_what_a_build_lacks() -> None:
    access = choose(1001, sudo_works=False, unshare_problem="mmdebstrap not installed")
    assert access.way == NONE and not access.possible and access.tools == ()
    assert access.lacks() == [f"root ({access.why})"]
    assert "no passwordless sudo" in access.why and "mmdebstrap not installed" in access.why
    assert access.line().startswith("none: not root")


def test_unshare_needs_its_programs_a_subordinate_range_and_user_namespaces() -> None:
    def problem(tools: dict[str, str], subids: dict[str, str], namespaces: bool) -> str | None:
        return unshare_problem(tools.get, "runner", lambda path: subids.get(path, ""), lambda: namespaces)

    assert problem(ALL_TOOLS, SUBIDS, True) is None
    missing = problem({"mmdebstrap": "/usr/bin/mmdebstrap"}, SUBIDS, True)
    assert missing is not None and missing.startswith("newuidmap, newgidmap not installed")
    other_user = {"/etc/subuid": "runneruser:1:2\n", "/etc/subgid": SUBIDS["/etc/subgid"]}
    assert problem(ALL_TOOLS, other_user, True) == (
        "no range for runner in /etc/subuid (usermod --add-subuids/--add-subgids)")
    assert problem(ALL_TOOLS, {"/etc/subuid": SUBIDS["/etc/subuid"]}, True) == (
        "no range for runner in /etc/subgid (usermod --add-subuids/--add-subgids)")
    refused = problem(ALL_TOOLS, SUBIDS, False)
    assert refused is not None and "user namespace" in refused


@pytest.mark.parametrize(("access", "tools", "lacking"), [
    (choose(1001, True, None), {"debootstrap"}, []),
    (choose(1001, True, None), set(), ["debootstrap"]),
    (choose(1001, False, None), {"debootstrap"}, ["mmdebstrap"]),
    (choose(1001, False, "mmdebstrap not installed"), {"debootstrap", "mmdebstrap"},
     ["root (not root, no passwordless sudo, and mmdebstrap --mode=unshare cannot: mmdebstrap not installed)"]),
])
def test_the_base_image_takes_the_tools_of_its_way(monkeypatch: pytest.MonkeyPatch, access: RootAccess,
                                                   tools: set[str], lacking: list[str]) -> None:
    monkeypatch.setattr(root_access, "current", lambda: access)
    monkeypatch.setattr(images.apt_sources, "lacks", lambda: [])  # a Debian archive named: tools and root alone
    monkeypatch.setattr(images.shutil, "which", lambda tool: f"/usr/bin/{tool}" if tool in tools else None)
    assert images.own_tools_missing(images.BASE) == lacking
    assert Readiness(None, lacking).can_build == (not lacking)
