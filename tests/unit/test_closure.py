"""Will it build? Install closure, conflicts and disk fit over real indexes served on 127.0.0.1.

The deb fixture is a Packages file in Debian's own format; the rpm fixture a repomd.xml + primary.xml
in rpm-md's shape (namespaces, rpm:entry with flags/epoch/ver/rel, rpmlib() requires, file provides).
The solver is libsolv (python3-solv); without it these tests skip, saying so.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from image_composer_mcp.server.packages.build_check import build_check_step, check_build
from image_composer_mcp.server.packages.closure import ClosureChecker
from image_composer_mcp.server.packages.disk_fit import (
    GiB,
    MiB,
    check_disk_fit,
    estimate_min_disk_size,
    estimate_required_bytes,
)
from image_composer_mcp.server.packages.solv_loader import load_solv, solv_unavailable_reason
from image_composer_mcp.server.packages.verifier import PackageVerifier

from tests.conftest import MINIMAL_TEMPLATE

needs_solv = pytest.mark.skipif(load_solv() is None, reason=f"libsolv unavailable: {solv_unavailable_reason()}")


def stanza(name: str, version: str = "1.0-1", arch: str = "amd64", size_kib: int = 100, **fields: str) -> str:
    lines = [f"Package: {name}", f"Version: {version}", f"Architecture: {arch}", f"Installed-Size: {size_kib}"]
    for key, value in fields.items():
        lines.append(f"{key.replace('_', '-')}: {value}")
    lines.append(f"Description: {name}\n the {name} package")
    return "\n".join(lines) + "\n"


DEB = "\n".join([
    stanza("app", size_kib=1000, Depends="libfoo (>= 2.0), mta-first | mail-transport-agent",
           Pre_Depends="base"),
    stanza("libfoo", "2.1-1", size_kib=200),
    stanza("base", arch="all", size_kib=50),
    stanza("mta-first", size_kib=10),
    stanza("postfix", size_kib=300, Provides="mail-transport-agent", Conflicts="mail-transport-agent"),
    stanza("exim4", size_kib=300, Provides="mail-transport-agent", Conflicts="mail-transport-agent"),
    stanza("old-tool", Depends="libfoo (>= 3.0)"),
    stanza("broken", Depends="libmissing"),
    stanza("wrapper", Depends="broken"),
    stanza("breaker", Breaks="base"),
    stanza("firstalt", Depends="alpha | beta"),
    stanza("alpha", Depends="alpha-data"),
    stanza("alpha-data"),
    stanza("beta"),
    stanza("desktop", size_kib=10, Depends="huge-suite"),
    stanza("huge-suite", size_kib=3_500_000),  # ~3.3 GiB installed
    stanza("i386-only", arch="i386"),
])


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def deb_checker(tmp_path: Path, served: tuple[Path, str]) -> ClosureChecker:
    root, url = served
    (root / "Packages.gz").write_bytes(gzip.compress(DEB.encode()))
    v = PackageVerifier(tmp_path / "cache", sources={"ubuntu24": [f"{url}/Packages.gz"]})
    return ClosureChecker(v)


def check(c: ClosureChecker, *names: str):  # noqa: ANN201
    return c.check(list(names), os="ubuntu", dist="ubuntu24", arch="x86_64")


# --------------------------------------------------------------------------- deb


@needs_solv
def test_deb_closure_chains_sizes_alternatives_and_pre_depends(deb_checker: ClosureChecker) -> None:
    r = check(deb_checker, "app")
    assert r.checked and r.complete and r.ok, r.message
    by_name = {p.name: p for p in r.packages}
    # Pre-Depends is followed; the first alternative wins over the virtual package's providers.
    assert set(by_name) == {"app", "libfoo", "base", "mta-first"}
    assert by_name["libfoo"].chain == ["app", "libfoo"]
    assert by_name["base"].chain == ["app", "base"]
    assert r.installed_bytes == (1000 + 200 + 50 + 10) * 1024
    alt = check(deb_checker, "firstalt")
    assert {p.name for p in alt.packages} == {"firstalt", "alpha", "alpha-data"}
    assert next(p for p in alt.packages if p.name == "alpha-data").chain == ["firstalt", "alpha", "alpha-data"]


@needs_solv
def test_deb_unresolvable_dependencies_carry_the_chain(deb_checker: ClosureChecker) -> None:
    r = check(deb_checker, "wrapper")
    assert not r.ok
    [u] = r.unresolvable
    assert u.requirement == "libmissing" and u.needed_by == "broken" and u.chain == ["wrapper", "broken"]
    assert "wrapper -> broken" in u.message and "libmissing" in r.message
    assert r.excluded == ["wrapper"]
    # A version constraint nothing meets is unresolvable too.
    old = check(deb_checker, "old-tool")
    assert old.unresolvable and any("libfoo" in u.message for u in old.unresolvable)
    assert old.unresolvable[0].chain == ["old-tool"]


@needs_solv
def test_deb_conflicts_and_breaks_inside_the_closure(deb_checker: ClosureChecker) -> None:
    r = check(deb_checker, "postfix", "exim4")
    assert len(r.conflicts) == 1 and {r.conflicts[0].package, r.conflicts[0].other} == {"postfix", "exim4"}
    b = check(deb_checker, "app", "breaker")
    assert b.conflicts, b.message
    c = b.conflicts[0]
    assert {c.package, c.other} == {"breaker", "base"}
    # base is not requested: the chain says why it is there.
    assert (c.other_chain if c.other == "base" else c.chain) == ["app", "base"]


@needs_solv
def test_deb_virtual_and_missing_requests_get_suggestions(deb_checker: ClosureChecker) -> None:
    r = check(deb_checker, "mail-transport-agent", "libfooo")
    assert r.virtual["mail-transport-agent"] == ["exim4", "postfix"]
    assert r.suggestions["mail-transport-agent"][:2] == ["exim4", "postfix"]
    assert r.missing == ["libfooo"] and "libfoo" in r.suggestions["libfooo"]
    # Foreign-architecture packages are not candidates.
    assert check(deb_checker, "i386-only").missing == ["i386-only"]


@needs_solv
def test_unreadable_repository_degrades_to_a_clear_note(tmp_path: Path) -> None:
    v = PackageVerifier(tmp_path / "cache", sources={"ubuntu24": ["http://127.0.0.1:9/Packages"]}, timeout=2)
    r = ClosureChecker(v).check(["app"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert not r.checked and not r.complete and "could be read" in r.message
    text = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="app")
    b = check_build(v, text)
    assert not b.errors and [w.code for w in b.warnings] == ["build.not_checked"]


# --------------------------------------------------------------------------- disk fit


@needs_solv
def test_desktop_on_a_4gib_disk_is_caught_with_numbers(deb_checker: ClosureChecker) -> None:
    from image_composer_mcp.server.validation.validator import validate_text

    text = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="desktop, app")
    assert validate_text(text).valid  # passes every check that existed before
    b = check_build(deb_checker.verifier, text)
    [err] = [e for e in b.errors if e.code == "build.disk_too_small"]
    assert err.path == "$.disk.size" and err.line == text.splitlines().index("  size: 4GiB") + 1
    assert "3.50GiB" in err.message and "needs" in err.message
    assert b.disk is not None and b.disk.status == "too_small"
    assert b.disk.min_disk_bytes is not None and b.disk.min_disk_bytes > 4 * GiB
    assert f"{b.disk.min_disk_bytes // GiB}GiB" in (err.hint or "")
    # The smallest size it names really fits, and the composer's estimate is at least that.
    bigger = text.replace("size: 4GiB", f"size: {b.disk.min_disk_bytes // GiB}GiB")
    assert not [e for e in check_build(deb_checker.verifier, bigger).errors if e.code.startswith("build.disk")]
    data = {"disk": {"size": "4GiB", "partitions": [
        {"start": "1MiB", "end": "513MiB", "mountPoint": "/boot/efi"},
        {"start": "513MiB", "end": "0", "mountPoint": "/", "fsType": "ext4"}]}}
    names = [p.name for p in b.closure.packages]
    composer = estimate_min_disk_size(data, b.closure.installed_bytes, names)
    assert composer >= b.disk.min_disk_bytes
    data["disk"]["size"] = f"{composer // GiB}GiB"
    assert check_disk_fit(data, b.closure.installed_bytes, names).status == "fits"
    small = check_build(deb_checker.verifier, text.replace("desktop, app", "app"))
    assert not small.errors and small.disk is not None and small.disk.status == "fits"


def test_disk_fit_tight_fixed_partitions_and_separate_usr() -> None:
    est = estimate_required_bytes(1 * GiB, 400, fs_type="ext4")
    assert est.min_partition_bytes > 1 * GiB + est.overhead["initramfs"]
    assert "kernel_allowance" not in est.overhead
    assert "kernel_allowance" in estimate_required_bytes(GiB, 400, has_kernel=False).overhead
    need = est.min_partition_bytes
    tight = {"disk": {"size": "8GiB", "partitions": [
        {"start": "1MiB", "end": f"{(need + need // 20) // MiB + 1}MiB", "mountPoint": "/", "fsType": "ext4"}]}}
    fit = check_disk_fit(tight, 1 * GiB, ["linux-image-amd64"] + [f"p{i}" for i in range(399)])
    assert fit.status == "tight" and fit.path == "$.disk.partitions[0].end"
    split = {"disk": {"size": "8GiB", "partitions": [
        {"start": "1MiB", "end": "1025MiB", "mountPoint": "/"},
        {"start": "1025MiB", "end": "0", "mountPoint": "/usr"}]}}
    fit = check_disk_fit(split, 1 * GiB, ["linux-image-amd64"])
    assert fit.status == "fits" and any("/usr is a separate partition" in n for n in fit.notes)
    nodisk = check_disk_fit({"disk": {"size": "1GiB"}}, 2 * GiB, ["kernel"])
    assert nodisk.status == "too_small" and nodisk.min_disk_bytes and nodisk.min_disk_bytes >= 3 * GiB
    assert check_disk_fit({}, GiB, []).status == "unknown"


@needs_solv
def test_removal_impact_says_what_stays(deb_checker: ClosureChecker) -> None:
    data = {"target": {"os": "ubuntu", "dist": "ubuntu24", "arch": "x86_64"},
            "systemConfig": {"packages": ["app", "libfoo", "desktop"]}}
    kept = deb_checker.removal_impact(data, "libfoo")
    assert kept.still_installed and kept.chain == ["app", "libfoo"] and "still needs it" in kept.message
    gone = deb_checker.removal_impact(data, "desktop")
    assert not gone.still_installed and gone.freed_bytes == (10 + 3_500_000) * 1024


@needs_solv
def test_agent_step_reports_the_verdict(deb_checker: ClosureChecker) -> None:
    class _Engine:
        def check_build(self, yaml: str):  # noqa: ANN202
            return check_build(deb_checker.verifier, yaml)

    text = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="desktop")
    step = build_check_step(_Engine(), text)
    assert step["ok"] is False and "NOT build" in step["verdict"] and step["min_disk_bytes"] > 4 * GiB
    assert any("disk" in e for e in step["errors"])


# --------------------------------------------------------------------------- rpm


def _rpm_pkg(name: str, ver: str, size: int, requires: list[str] = (), provides: list[str] = (),
             conflicts: list[str] = (), files: list[str] = (), arch: str = "x86_64") -> str:
    def entries(tag: str, items: list[str]) -> str:
        if not items:
            return ""
        out = []
        for item in items:
            if " >= " in item:
                n, v = item.split(" >= ")
                out.append(f'<rpm:entry name="{n}" flags="GE" epoch="0" ver="{v}"/>')
            else:
                out.append(f'<rpm:entry name="{item}"/>')
        return f"<rpm:{tag}>{''.join(out)}</rpm:{tag}>"

    provides = [name, *provides]
    return f"""<package type="rpm">
  <name>{name}</name><arch>{arch}</arch>
  <version epoch="0" ver="{ver}" rel="1.azl3"/>
  <checksum type="sha256" pkgid="YES">{hashlib.sha256(name.encode()).hexdigest()}</checksum>
  <summary>{name}</summary><description>{name}</description>
  <packager>test</packager><url>https://example.org</url>
  <time file="1700000000" build="1700000000"/>
  <size package="{size // 3}" installed="{size}" archive="{size}"/>
  <location href="Packages/{name}-{ver}-1.azl3.{arch}.rpm"/>
  <format>
    <rpm:license>MIT</rpm:license><rpm:vendor>t</rpm:vendor><rpm:group>t</rpm:group>
    <rpm:buildhost>t</rpm:buildhost><rpm:sourcerpm>{name}-{ver}-1.src.rpm</rpm:sourcerpm>
    <rpm:header-range start="1" end="2"/>
    {entries("provides", provides)}{entries("requires", list(requires))}{entries("conflicts", list(conflicts))}
    {''.join(f'<file>{f}</file>' for f in files)}
  </format>
</package>"""


RPM_PACKAGES = [
    _rpm_pkg("bash", "5.2.15", 8_000_000, provides=["/bin/sh"], files=["/usr/bin/bash"]),
    _rpm_pkg("glibc", "2.38", 20_000_000, provides=["libc.so.6()(64bit)"], requires=["rpmlib(CompressedFileNames)"]),
    _rpm_pkg("openssh-server", "9.3p2", 1_500_000, requires=["/bin/sh", "libc.so.6()(64bit)", "openssl-libs >= 3.0"]),
    _rpm_pkg("openssl-libs", "3.1.4", 6_000_000, requires=["glibc"]),
    _rpm_pkg("needs-ghost", "1.0", 1000, requires=["libghost.so.1()(64bit)"]),
    _rpm_pkg("chrony", "4.5", 600_000, conflicts=["ntp"], requires=["glibc"]),
    _rpm_pkg("ntp", "4.2.8p17", 900_000, requires=["glibc"]),
    _rpm_pkg("docs", "1.0", 5000, arch="noarch"),
]


def rpm_metadata(root: Path) -> None:
    body = "\n".join(RPM_PACKAGES)
    primary = ('<?xml version="1.0" encoding="UTF-8"?>\n<metadata xmlns="http://linux.duke.edu/metadata/common" '
               f'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="{len(RPM_PACKAGES)}">\n{body}\n'
               '</metadata>\n').encode()
    gz = gzip.compress(primary)
    digest = hashlib.sha256(gz).hexdigest()
    (root / "repodata").mkdir(parents=True)
    (root / "repodata" / f"{digest}-primary.xml.gz").write_bytes(gz)
    (root / "repodata" / "repomd.xml").write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">
  <revision>1700000000</revision>
  <data type="primary">
    <checksum type="sha256">{digest}</checksum>
    <open-checksum type="sha256">{hashlib.sha256(primary).hexdigest()}</open-checksum>
    <location href="repodata/{digest}-primary.xml.gz"/>
    <timestamp>1700000000</timestamp><size>{len(gz)}</size><open-size>{len(primary)}</open-size>
  </data>
</repomd>
""")


@needs_solv
def test_rpm_repository_closure_missing_dependency_and_conflict(tmp_path: Path,
                                                                 served: tuple[Path, str]) -> None:
    root, url = served
    rpm_metadata(root / "azl" / "x86_64")
    v = PackageVerifier(tmp_path / "cache", sources={"azl3": [f"rpm+{url}/azl/{{arch}}"]})
    c = ClosureChecker(v)
    r = c.check(["openssh-server", "docs"], os="azure-linux", dist="azl3", arch="x86_64")
    assert r.ok, r.message
    by_name = {p.name: p for p in r.packages}
    # File and soname requires resolve through provides; rpmlib() requires are the rpm tool's, not packages'.
    assert set(by_name) == {"openssh-server", "bash", "glibc", "openssl-libs", "docs"}
    assert by_name["glibc"].chain[0] == "openssh-server" and by_name["glibc"].chain[-1] == "glibc"
    assert r.installed_bytes == 1_500_000 + 8_000_000 + 20_000_000 + 6_000_000 + 5000
    missing = c.check(["needs-ghost"], os="azure-linux", dist="azl3", arch="x86_64")
    [u] = missing.unresolvable
    assert "libghost.so.1()(64bit)" in u.requirement and u.chain == ["needs-ghost"]
    clash = c.check(["chrony", "ntp"], os="azure-linux", dist="azl3", arch="x86_64")
    assert [{x.package, x.other} for x in clash.conflicts] == [{"chrony", "ntp"}]
    assert not clash.ok and "conflict" in clash.message


# --------------------------------------------------------------------------- the real Debian index

APT_LIST = next(iter(sorted(Path("/var/lib/apt/lists").glob("*debian_dists_bookworm_main_binary-amd64_Packages*"))),
                None)


@needs_solv
@pytest.mark.skipif(APT_LIST is None, reason="no bookworm main amd64 list in /var/lib/apt/lists "
                                              "(run apt-get update on a Debian 12 machine)")
def test_real_bookworm_desktop_on_4gib_root_is_caught(tmp_path: Path) -> None:
    v = PackageVerifier(tmp_path / "cache", sources={"debian13": [str(APT_LIST)]}, offline=True)
    text = (MINIMAL_TEMPLATE.format(name="desk", description="d", keywords="k",
                                    packages="task-gnome-desktop, task-kde-desktop, linux-image-amd64")
            .replace("os: ubuntu", "os: debian").replace("dist: ubuntu24", "dist: debian13"))
    b = check_build(v, text)
    c = b.closure
    assert c.checked and c.complete and not c.missing, c.message
    assert len(c.packages) > 1000 and c.installed_bytes > 2 * GiB
    names = {p.name for p in c.packages}
    assert {"gnome-shell", "plasma-desktop", "initramfs-tools"} <= names
    assert [e.code for e in b.errors] == ["build.disk_too_small"], b.summary()
    shell = next(p for p in c.packages if p.name == "gnome-shell")
    assert shell.chain[0] == "task-gnome-desktop" and shell.chain[-1] == "gnome-shell"


@needs_solv
def test_repository_priority_blocking_and_allow_packages(tmp_path: Path, served: tuple[Path, str]) -> None:
    root, url = served
    (root / "Packages").write_text(stanza("tool", "2.0-1") + "\n" + stanza("helper", "1.0-1"))
    extra = root / "extra" / "dists" / "x" / "main" / "binary-amd64"
    extra.mkdir(parents=True)
    (extra / "Packages").write_text(stanza("tool", "1.5-1", size_kib=7) + "\n" + stanza("helper", "0.5-1"))
    v = PackageVerifier(tmp_path / "cache", sources={"ubuntu24": [f"{url}/Packages"]},
                        allow_private_template_hosts=True)
    c = ClosureChecker(v)

    def closure(priority: int, allow: list[str] | None = None) -> dict[str, str]:
        repo = {"url": f"{url}/extra", "codename": "x", "component": "main", "priority": priority}
        if allow is not None:
            repo["allowPackages"] = allow
        data = {"target": {"os": "ubuntu", "dist": "ubuntu24", "arch": "x86_64"},
                "systemConfig": {"packages": ["tool", "helper"]}, "packageRepositories": [repo]}
        r = c.check_template(data)
        assert r.ok and r.complete, r.message
        return {p.name: p.version for p in r.packages}

    # Higher priority wins over a higher version (apt pinning), equal priority takes the newest.
    assert closure(1001) == {"tool": "1.5-1", "helper": "0.5-1"}
    assert closure(0) == {"tool": "2.0-1", "helper": "1.0-1"}
    # A negative priority blocks the repository (upstream shouldBlockPackage).
    assert closure(-1) == {"tool": "2.0-1", "helper": "1.0-1"}
    # allowPackages: only the listed names may come from that repository.
    assert closure(1001, ["tool"]) == {"tool": "1.5-1", "helper": "1.0-1"}
