"""Package verification against repository indexes served by a real local HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
import zstandard
from image_composer_mcp.server.knowledge.package_names import equivalents, spelling_variants
from image_composer_mcp.server.packages.index_parsers import open_index, parse_deb_packages, parse_rpm_primary
from image_composer_mcp.server.packages.matching import version_pin_candidates
from image_composer_mcp.server.packages.sources import DEFAULT_SOURCES, RepoSource, packages_from_template
from image_composer_mcp.server.packages.verifier import PackageVerifier

SHARED = Path(__file__).resolve().parents[3] / "shared"
TEMPLATES = SHARED / "reference" / "os-image-composer" / "image-templates"


# --------------------------------------------------------------------------- fixture content


def deb_stanza(name: str, version: str = "1.0-1", arch: str = "amd64", provides: str | None = None) -> str:
    lines = [f"Package: {name}", f"Version: {version}", f"Architecture: {arch}", "Maintainer: T <t@example.org>"]
    if provides:
        lines.append(f"Provides: {provides}")
    # A folded description line that looks like a field must not be read as one.
    lines += [f"Description: the {name} package", " Package: not-a-real-package", " ."]
    return "\n".join(lines) + "\n"


DEB_PACKAGES = [
    ("openssh-server", "1:9.6p1-3ubuntu13", "amd64", "ssh-server, sftp-server"),
    ("openssh-client", "1:9.6p1-3ubuntu13", "amd64", "ssh-client, rsh-client (= 1:9.6p1)"),
    ("openssh-sftp-server", "1:9.6p1-3ubuntu13", "amd64", None),
    ("docker.io", "24.0.7-0ubuntu4", "amd64", "docker"),
    ("docker-compose", "1.29.2-6", "all", None),
    ("postfix", "3.8.6-1build2", "amd64", "mail-transport-agent, default-mta"),
    ("curl", "8.5.0-2ubuntu10.6", "amd64", None),
    ("ca-certificates", "20240203", "all", None),
    ("python3-pip", "24.0+dfsg-1ubuntu1", "all", None),
    ("python3.12", "3.12.3-1", "amd64", None),
    ("libglib2.0-0t64", "2.80.0-6ubuntu3", "amd64", "libglib2.0-0 (= 2.80.0-6ubuntu3)"),
    ("gstreamer1.0-x", "1.24.2-1", "amd64", None),
    ("wayland-protocols", "1.34-1", "all", None),
    ("libwayland-client0", "1.22.0-2.1build1", "amd64", None),
    ("libva2", "2.20.0-2build1", "amd64", None),
    ("libva-drm2", "2.20.0-2build1", "amd64", None),
    ("linux-image-generic-hwe-24.04", "6.11.0-17.17~24.04.2", "amd64", None),
    ("linux-image-6.17-intel", "260128t080735z-r2", "amd64", None),
    ("nginx", "1.24.0-2ubuntu7", "amd64", "httpd"),
    ("nginx-full", "1.24.0-2ubuntu7", "all", None),
    ("foo", "1.0", "amd64", None),
    ("foo-2", "2.0", "amd64", None),
    ("armonly-tool", "1.0", "arm64", None),
    ("systemd", "255.4-1ubuntu8", "amd64", "systemd-sysusers (= 255.4-1ubuntu8)"),
]


def deb_index(rows: list[tuple[str, str, str, str | None]]) -> bytes:
    return "\n".join(deb_stanza(*r) for r in rows).encode()


RPM_PACKAGES = [
    # name, arch, epoch, ver, rel, provides
    ("openssh-server", "x86_64", "0", "9.8p1", "1.azl3", ["openssh-server", "sshd"]),
    ("openssh", "x86_64", "0", "9.8p1", "1.azl3", []),
    ("kernel", "x86_64", "0", "6.6.57.1", "6.azl3", ["kernel-core"]),
    ("kernel", "x86_64", "0", "6.6.64.2", "1.azl3", ["kernel-core"]),
    ("kernel-drivers-gpu", "x86_64", "0", "6.12.55", "1.emt3", []),
    ("util-linux-devel", "x86_64", "0", "2.40.2", "3.emt3", ["pkgconfig(blkid)", "libblkid.so.1()(64bit)"]),
    ("moby-engine", "x86_64", "0", "25.0.3", "9.azl3", ["docker-engine"]),
    ("python3-pip", "noarch", "0", "24.2", "1.azl3", []),
    ("ca-certificates", "noarch", "0", "3.0.0", "8.azl3", []),
    ("kernel-64k", "aarch64", "0", "6.6.57.1", "6.azl3", []),
    ("wayland-devel", "x86_64", "0", "1.22.0", "1.azl3", []),
    ("i686-only", "i686", "0", "1.0", "1", []),
    ("systemd", "x86_64", "1", "255", "20.azl3", ["systemd-udev"]),
]


def rpm_primary(rows: list[tuple[str, str, str, str, str, list[str]]]) -> bytes:
    pkgs = []
    for name, arch, epoch, ver, rel, provides in rows:
        prov = "".join(f'<rpm:entry name="{p}" flags="EQ" ver="{ver}"/>' for p in provides)
        pkgs.append(
            f'<package type="rpm"><name>{name}</name><arch>{arch}</arch>'
            f'<version epoch="{epoch}" ver="{ver}" rel="{rel}"/>'
            f'<checksum type="sha256" pkgid="YES">{"0" * 64}</checksum>'
            f"<summary>{name} summary</summary><description>{name}</description>"
            f'<format><rpm:license>MIT</rpm:license><rpm:provides>{prov}</rpm:provides>'
            f'<rpm:requires><rpm:entry name="glibc"/><rpm:entry name="notprovided-{name}"/></rpm:requires>'
            f"<file>/usr/bin/{name}</file></format></package>"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<metadata xmlns="http://linux.duke.edu/metadata/common" '
        f'xmlns:rpm="http://linux.duke.edu/metadata/rpm" packages="{len(rows)}">'
        + "".join(pkgs) + "</metadata>"
    ).encode()


def repomd(href: str, data: bytes) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<repomd xmlns="http://linux.duke.edu/metadata/repo" xmlns:rpm="http://linux.duke.edu/metadata/rpm">'
        "<revision>1</revision>"
        '<data type="filelists"><location href="repodata/filelists.xml.gz"/></data>'
        f'<data type="primary"><checksum type="sha256">{hashlib.sha256(data).hexdigest()}</checksum>'
        f'<location href="{href}"/><size>{len(data)}</size></data>'
        "</repomd>"
    ).encode()


COMPRESS = {
    "": lambda b: b,
    ".gz": gzip.compress,
    ".xz": lzma.compress,
    ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


# --------------------------------------------------------------------------- HTTP server


@dataclass
class Repo:
    files: dict[str, bytes] = field(default_factory=dict)
    log: list[tuple[str, int, str | None]] = field(default_factory=list)  # path, status, If-None-Match
    failing: set[str] = field(default_factory=set)  # paths answered with 503
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def gets(self, suffix: str = "") -> list[tuple[str, int, str | None]]:
        with self.lock:
            return [e for e in self.log if e[0].endswith(suffix)]


def _handler(repo: Repo) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server API
            path = self.path.split("?", 1)[0]
            with repo.lock:
                body = repo.files.get(path)
            inm = self.headers.get("If-None-Match")
            if path in repo.failing:
                status, body = 503, None
            elif body is None:
                status = 404
            else:
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                status = 304 if inm == etag else 200
            with repo.lock:
                repo.log.append((path, status, inm))
            self.send_response(status)
            if body is not None:
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", formatdate(usegmt=True))
            if status == 200:
                assert body is not None
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_header("Content-Length", "0")
                self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.fixture()
def repo() -> Iterator[Repo]:
    r = Repo()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(r))
    r.port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield r
    finally:
        server.shutdown()
        server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def deb_source(repo: Repo, path: str = "/ubuntu", codename: str = "noble", component: str = "main") -> str:
    return f"deb+{repo.url}{path}?codename={codename}&component={component}"


def publish_deb(repo: Repo, ext: str = ".xz", path: str = "/ubuntu", codename: str = "noble",
                component: str = "main", arch: str = "amd64", rows: list | None = None) -> str:
    url = f"{path}/dists/{codename}/{component}/binary-{arch}/Packages{ext}"
    repo.files[url] = COMPRESS[ext](deb_index(rows if rows is not None else DEB_PACKAGES))
    return url


def publish_rpm(repo: Repo, ext: str = ".zst", path: str = "/azl/x86_64", rows: list | None = None) -> str:
    data = COMPRESS[ext](rpm_primary(rows if rows is not None else RPM_PACKAGES))
    href = f"repodata/{hashlib.sha256(data).hexdigest()[:12]}-primary.xml{ext}"
    repo.files[f"{path}/{href}"] = data
    repo.files[f"{path}/repodata/repomd.xml"] = repomd(href, data)
    return f"{path}/{href}"


def verifier(tmp_path: Path, sources: dict[str, list[str]], **kw: object) -> PackageVerifier:
    return PackageVerifier(tmp_path / "cache", sources=sources, **kw)  # type: ignore[arg-type]


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --------------------------------------------------------------------------- parsing and fetching


@pytest.mark.parametrize("ext", [".xz", ".gz", ""])
def test_deb_index_every_compression(tmp_path: Path, repo: Repo, ext: str) -> None:
    publish_deb(repo, ext)
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)]})
    r = v.verify(["openssh-server", "curl", "not-a-package"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert r.complete and not r.verified
    assert r.found == ["openssh-server", "curl"]
    assert r.missing == ["not-a-package"]
    assert r.sources[0].ok and r.sources[0].packages == len(DEB_PACKAGES) - 1  # arm64 entry filtered
    # Compressions are tried in order xz, gz, plain: a missing better one costs one 404.
    tried = [p.rsplit("/", 1)[-1] for p, _, _ in repo.gets()]
    order = ["Packages.xz", "Packages.gz", "Packages"]
    assert tried == order[: order.index("Packages" + ext) + 1]


@pytest.mark.parametrize("ext", [".zst", ".gz", ".xz", ""])
def test_rpm_repomd_to_primary_chain(tmp_path: Path, repo: Repo, ext: str) -> None:
    primary = publish_rpm(repo, ext)
    v = verifier(tmp_path, {"azl3": [f"rpm+{repo.url}/azl/{{arch}}"]})
    r = v.verify(["openssh-server", "kernel", "moby-engine", "nope"], os="azure-linux", dist="azl3", arch="x86_64")
    assert r.found == ["openssh-server", "kernel", "moby-engine"]
    assert r.missing == ["nope"]
    assert [p for p, _, _ in repo.gets()] == ["/azl/x86_64/repodata/repomd.xml", primary]


def test_rpm_primary_checksum_mismatch_is_an_unconsulted_source(tmp_path: Path, repo: Repo) -> None:
    primary = publish_rpm(repo, ".gz")
    repo.files[primary] = gzip.compress(rpm_primary(RPM_PACKAGES[:2]))  # differs from repomd's checksum
    v = verifier(tmp_path, {"azl3": [f"rpm+{repo.url}/azl/{{arch}}"]})
    r = v.verify(["openssh-server", "kernel"], os=None, dist="azl3", arch="x86_64")
    assert not r.verified and not r.complete
    assert r.missing == [] and r.unchecked == ["openssh-server", "kernel"]
    assert "checksum" in (r.sources[0].error or "")


def test_etag_revalidation_after_ttl_and_no_request_within_ttl(tmp_path: Path, repo: Repo) -> None:
    index_path = publish_deb(repo, ".gz")
    clock = Clock()
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)]}, ttl_seconds=3600, clock=clock)
    first = v.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert first.verified and not first.sources[0].from_cache
    assert repo.gets(index_path) == [(index_path, 200, None)]
    n_requests = len(repo.gets())

    clock.now += 1800  # within TTL: no request at all
    again = v.verify(["curl", "openssh-server"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert again.verified and again.sources[0].from_cache
    assert len(repo.gets()) == n_requests

    # A restarted process within TTL reuses the disk cache and its parsed form without a request.
    v2 = verifier(tmp_path, {"ubuntu24": [deb_source(repo)]}, ttl_seconds=3600, clock=clock)
    assert v2.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64").verified
    assert len(repo.gets()) == n_requests

    clock.now += 3600  # past TTL: conditional request, answered 304, cached copy reused
    loaded_before = v._store._loaded[next(iter(v._store._loaded))].index
    third = v.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert third.verified and third.sources[0].from_cache
    last = repo.gets(index_path)[-1]
    assert last[1] == 304 and last[2] is not None  # sent If-None-Match, got 304
    assert v.stats()["http"].get("304") == 1
    assert v._store._loaded[next(iter(v._store._loaded))].index is loaded_before  # not re-parsed

    # Changed content after TTL: 200 and the new package is seen.
    clock.now += 7200
    publish_deb(repo, ".gz", rows=[*DEB_PACKAGES, ("brand-new", "1", "amd64", None)])
    fourth = v.verify(["brand-new"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert fourth.verified and repo.gets(index_path)[-1][1] == 200


def test_stale_cache_is_used_when_refresh_fails_within_max_stale(tmp_path: Path, repo: Repo) -> None:
    index_path = publish_deb(repo)
    clock = Clock()
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)]}, ttl_seconds=100, max_stale_seconds=1000,
                 clock=clock)
    assert v.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64").verified
    assert list((tmp_path / "cache" / "packages" / "parsed").glob("*.json"))
    repo.failing.add(index_path)
    clock.now += 500
    r = v.verify(["curl", "nope"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert r.complete and r.found == ["curl"] and r.missing == ["nope"]
    assert "cached copy" in (r.sources[0].error or "") and "from cache" in r.message
    assert repo.gets(index_path)[-1][1] == 503
    clock.now += 1000  # too old to stand in for the repository any more
    r = v.verify(["curl", "nope"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert not r.complete and r.missing == [] and r.unchecked == ["curl", "nope"]


def test_provides_count_as_found(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    publish_rpm(repo)
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)], "azl3": [f"rpm+{repo.url}/azl/{{arch}}"]})
    deb = v.verify(["mail-transport-agent", "rsh-client", "libglib2.0-0", "docker"], os="ubuntu",
                   dist="ubuntu24", arch="x86_64")
    assert deb.verified, deb.message
    assert "postfix" in deb.notes["mail-transport-agent"]
    rpm = v.verify(["sshd", "docker-engine", "kernel-core", "systemd-udev"], os="azure-linux", dist="azl3",
                   arch="x86_64")
    assert rpm.verified, rpm.message
    assert "moby-engine" in rpm.notes["docker-engine"]
    # sonames and pkgconfig() provides are not kept: templates cannot name them anyway.
    assert v.verify(["notprovided-openssh"], os=None, dist="azl3", arch="x86_64").missing == ["notprovided-openssh"]


def test_glob_patterns(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)]})
    r = v.verify(["wayland*", "libva-???[0-9]", "libva?", "nosuch*", "*-client0"], os="ubuntu", dist="ubuntu24",
                 arch="x86_64")
    assert r.found == ["wayland*", "libva-???[0-9]", "libva?", "*-client0"]
    assert r.missing == ["nosuch*"]
    assert "libva-drm2" in r.notes["libva-???[0-9]"]


def test_version_pins(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    publish_rpm(repo)
    publish_rpm(repo, path="/azl/aarch64")
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)], "azl3": [f"rpm+{repo.url}/azl/{{arch}}"]})
    deb = v.verify(["openssh-server=1:9.6p1-3ubuntu13", "curl_8.5.0-2ubuntu10.6", "curl-8.5.0",
                    "linux-image-6.17-intel_260128t080735z-r2", "python3.12", "libglib2.0-0t64", "foo-2",
                    "nosuch-1.2", "curl=9.9"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert deb.missing == ["nosuch-1.2"]
    # Real names ending in digits are exact matches, never stripped.
    for exact in ("python3.12", "libglib2.0-0t64", "foo-2"):
        assert exact in deb.found and exact not in deb.notes
    assert "version 9.9 is not in the index" in deb.notes["curl=9.9"]
    assert "is not in the index" not in deb.notes["curl-8.5.0"]

    rpm = v.verify(["kernel-drivers-gpu-6.12.55", "util-linux-devel-2.40.2-3.emt3", "kernel-6.6.64.2",
                    "kernel-7.0"], os="azure-linux", dist="azl3", arch="x86_64")
    assert rpm.found == ["kernel-drivers-gpu-6.12.55", "util-linux-devel-2.40.2-3.emt3", "kernel-6.6.64.2",
                         "kernel-7.0"]
    assert "not in the index" in rpm.notes["kernel-7.0"] and "6.6.57.1-6.azl3" in rpm.notes["kernel-7.0"]
    assert "kernel-7.0" in rpm.message
    arm = v.verify(["kernel-64k-6.6.57.1-6.azl3.aarch64.rpm"], os=None, dist="azl3", arch="aarch64")
    assert arm.verified, arm.message


def test_architecture_all_and_noarch(tmp_path: Path, repo: Repo) -> None:
    # One index file listing several architectures, used for both targets.
    repo.files["/mixed/Packages.gz"] = gzip.compress(deb_index(DEB_PACKAGES))
    repo.files["/rpm/primary.xml.gz"] = gzip.compress(rpm_primary(RPM_PACKAGES))
    v = verifier(tmp_path, {"ubuntu24": [f"{repo.url}/mixed/Packages.gz"],
                            "azl3": [f"{repo.url}/rpm/primary.xml.gz"]})
    amd = v.verify(["docker-compose", "armonly-tool", "curl"], os=None, dist="ubuntu24", arch="x86_64")
    arm = v.verify(["docker-compose", "armonly-tool", "curl"], os=None, dist="ubuntu24", arch="aarch64")
    assert amd.found == ["docker-compose", "curl"] and amd.missing == ["armonly-tool"]
    assert arm.found == ["docker-compose", "armonly-tool"] and arm.missing == ["curl"]
    x86 = v.verify(["python3-pip", "kernel-64k", "i686-only"], os=None, dist="azl3", arch="x86_64")
    a64 = v.verify(["python3-pip", "kernel-64k", "openssh-server"], os=None, dist="azl3", arch="aarch64")
    assert x86.found == ["python3-pip"] and x86.missing == ["kernel-64k", "i686-only"]
    assert a64.found == ["python3-pip", "kernel-64k"] and a64.missing == ["openssh-server"]


def test_suggestions_exist_in_the_index(tmp_path: Path, repo: Repo) -> None:
    rows = [r for r in DEB_PACKAGES if r[0] != "docker.io"] + [("docker.io", "24.0.7", "amd64", None)]
    publish_deb(repo, rows=rows)
    publish_rpm(repo)
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo)], "azl3": [f"rpm+{repo.url}/azl/{{arch}}"]})
    r = v.verify(["openssh-servr", "docker", "moby-engine", "kernel", "python-pip"], os="ubuntu",
                 dist="ubuntu24", arch="x86_64")
    assert r.missing == ["openssh-servr", "docker", "moby-engine", "kernel", "python-pip"]
    assert r.suggestions["openssh-servr"][0] == "openssh-server"
    assert r.suggestions["docker"][0] == "docker.io"
    assert r.suggestions["moby-engine"][0] == "docker.io"
    assert r.suggestions["kernel"][0] == "linux-image-generic-hwe-24.04" or "linux-image" in r.suggestions["kernel"][0]
    assert r.suggestions["python-pip"][0] == "python3-pip"
    names = {row[0] for row in rows if row[2] in ("amd64", "all")}
    for suggested in r.suggestions.values():
        assert set(suggested) <= names
    assert v.suggest("openssh-servr", dist="ubuntu24", arch="x86_64")[0] == "openssh-server"
    assert v.suggest("docker", dist="azl3", arch="x86_64")[0] == "moby-engine"
    assert v.suggest("NGINX", dist="ubuntu24", arch="x86_64")[0] == "nginx"


def test_unreachable_repository_never_reports_missing(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    dead = f"deb+http://127.0.0.1:{closed_port()}/ubuntu?codename=noble&component=main"
    clock = Clock()
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo), dead]}, timeout=2.0, clock=clock,
                 retry_after_seconds=60)
    r = v.verify(["curl", "only-in-the-dead-repo", "openssh-servr"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert r.verified is False and r.complete is False
    assert r.found == ["curl"]
    assert r.missing == []
    assert r.unchecked == ["only-in-the-dead-repo", "openssh-servr"]
    assert [s.ok for s in r.sources] == [True, False]
    assert r.sources[1].error
    assert "Could not consult" in r.message
    assert r.to_dict()["unchecked"] == r.unchecked
    # A failed repository is not retried on every call, but is after the back-off.
    again = v.verify(["only-in-the-dead-repo"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert again.unchecked == ["only-in-the-dead-repo"] and "not retried" in (again.sources[1].error or "")
    clock.now += 61
    later = v.verify(["only-in-the-dead-repo"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert later.unchecked == ["only-in-the-dead-repo"] and "not retried" not in (later.sources[1].error or "")


def test_offline_without_cache_and_corrupt_index(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    off = verifier(tmp_path / "off", {"ubuntu24": [deb_source(repo)]}, offline=True)
    r = off.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert not r.verified and r.unchecked == ["curl"] and r.missing == []
    assert repo.gets() == []

    repo.files["/bad/dists/noble/main/binary-amd64/Packages.gz"] = b"\x1f\x8b" + b"garbage" * 50
    bad = verifier(tmp_path / "bad", {"ubuntu24": [deb_source(repo, path="/bad")]})
    r = bad.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert not r.verified and r.unchecked == ["curl"] and r.missing == []
    assert "corrupt" in (r.sources[0].error or "")

    # Offline with a cache: answers from the cache.
    online = verifier(tmp_path / "warm", {"ubuntu24": [deb_source(repo)]})
    assert online.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64").verified
    warm_off = verifier(tmp_path / "warm", {"ubuntu24": [deb_source(repo)]}, offline=True, ttl_seconds=0)
    n = len(repo.gets())
    assert warm_off.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64").verified
    assert len(repo.gets()) == n


def test_template_repositories(tmp_path: Path, repo: Repo) -> None:
    publish_deb(repo)
    publish_deb(repo, path="/extra", codename="noble", component="kernels",
                rows=[("extra-kernel", "1", "amd64", None), ("extra-headers", "1", "amd64", None)])
    repos = [
        {"codename": "company-internal", "url": "<URL>", "pkey": "<PUBLIC_KEY_URL>", "component": "main"},
        {"codename": "noble", "url": f"{repo.url}/extra/", "pkey": "[trusted=yes]", "component": "kernels"},
    ]
    sources = {"ubuntu24": [deb_source(repo)]}
    names = ["curl", "extra-kernel"]

    allowed = verifier(tmp_path / "a", sources, allow_private_template_hosts=True)
    r = allowed.verify(names, os="ubuntu", dist="ubuntu24", arch="x86_64", repositories=repos)
    assert r.verified, r.message
    assert "placeholder" in r.message

    # The default guard refuses template URLs that resolve to this machine.
    guarded = verifier(tmp_path / "g", sources)
    extra_before = [p for p, _, _ in repo.gets() if p.startswith("/extra/")]
    r = guarded.verify(names, os="ubuntu", dist="ubuntu24", arch="x86_64", repositories=repos)
    assert not r.verified and r.unchecked == ["extra-kernel"] and r.missing == []
    assert "non-public" in (r.sources[-1].error or "")
    assert [p for p, _, _ in repo.gets() if p.startswith("/extra/")] == extra_before

    disabled = verifier(tmp_path / "d", sources, allow_template_repositories=False)
    r = disabled.verify(names, os="ubuntu", dist="ubuntu24", arch="x86_64", repositories=repos)
    assert not r.verified and r.found == ["curl"] and r.unchecked == ["extra-kernel"] and r.missing == []

    # allowPackages limits what may come from that repository.
    pinned = [{**repos[1], "allowPackages": ["extra-kernel-1.0"]}]
    r = allowed.verify(["extra-kernel", "extra-headers"], os="ubuntu", dist="ubuntu24", arch="x86_64",
                       repositories=pinned)
    assert r.found == ["extra-kernel"] and r.missing == ["extra-headers"]

    # Template local-path repositories are not read: their packages stay unchecked.
    r = allowed.verify(["curl", "local-thing"], os="ubuntu", dist="ubuntu24", arch="x86_64",
                       repositories=[{"codename": "localdeb", "path": "/data/localdeb", "pkey": "[trusted=yes]"}])
    assert r.unchecked == ["local-thing"] and r.missing == []


def test_target_resolution(tmp_path: Path, repo: Repo) -> None:
    publish_rpm(repo, path="/el/x86_64")
    v = verifier(tmp_path, {"el10": [f"rpm+{repo.url}/el/{{arch}}"]})
    r = v.verify(["openssh-server"], os="redhat-compatible-distro", dist="rcd10", arch="amd64")
    assert r.verified and r.dist == "el10" and r.arch == "x86_64"
    r = v.verify(["openssh-server"], os="redhat-compatible-distro", dist=None, arch=None)
    assert r.verified and "assumed" in r.message
    r = v.verify(["x"], os=None, dist="nosuchdist", arch="x86_64")
    assert not r.verified and r.unchecked == ["x"] and "Unknown distribution" in r.message
    # emt3's only upstream repository is x86_64: aarch64 has nothing to consult.
    r = v.verify(["kernel"], os="edge-microvisor-toolkit", dist="emt3", arch="aarch64")
    assert not r.verified and r.unchecked == ["kernel"] and r.missing == []
    assert v.verify([], os=None, dist="el10", arch="x86_64").verified


def test_concurrent_verifies_download_each_index_once(tmp_path: Path, repo: Repo) -> None:
    for comp in ("main", "universe"):
        publish_deb(repo, component=comp)
    v = verifier(tmp_path, {"ubuntu24": [deb_source(repo, component="main,universe")]})
    results = []

    def run() -> None:
        results.append(v.verify(["curl", "openssh-server"], os="ubuntu", dist="ubuntu24", arch="x86_64"))

    threads = [threading.Thread(target=run) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r.verified for r in results)
    assert sorted(p for p, s, _ in repo.gets() if s == 200) == sorted(
        f"/ubuntu/dists/noble/{c}/binary-amd64/Packages.xz" for c in ("main", "universe"))


def test_large_index_300_lookups(tmp_path: Path) -> None:
    rows = [(f"pkg{i:05d}-{'lib' if i % 3 else 'tool'}", f"{i}.0", "amd64" if i % 5 else "all",
             f"virt{i}" if i % 100 == 0 else None) for i in range(60_000)]
    path = tmp_path / "Packages.gz"
    path.write_bytes(gzip.compress(deb_index(rows), compresslevel=1))
    v = verifier(tmp_path, {"debian13": [str(path)]})
    present = [rows[i][0] for i in range(0, 60_000, 240)]  # 250 names
    absent = [f"absent-{i}" for i in range(40)] + [f"pkg{i:05d}-zzz" for i in range(10)]
    first = v.verify(present + absent, os="debian", dist="debian13", arch="x86_64")
    assert first.complete and first.found == present and first.missing == absent
    assert first.sources[0].packages == 60_000
    again = v.verify(present + ["virt500", "virt59900"], os="debian", dist="debian13", arch="x86_64")
    assert again.verified
    assert v.stats()["total_packages"] == 60_000


def test_real_apt_packages_file(tmp_path: Path) -> None:
    lists = Path("/var/lib/apt/lists")
    candidates = sorted(lists.glob("*_main_binary-*_Packages*"), key=lambda p: p.stat().st_size, reverse=True)
    if not candidates:
        pytest.skip("no apt Packages list on this machine")
    src = candidates[0]
    arch = src.name.split("_binary-", 1)[1].split("_", 1)[0]
    if src.suffix == ".lz4":  # apt keeps lists lz4-compressed; convert with the tools apt ships
        plain = tmp_path / "Packages"
        if shutil.which("lz4"):
            cmd = ["lz4", "-dc", str(src)]
        elif Path("/usr/lib/apt/apt-helper").exists():
            cmd = ["/usr/lib/apt/apt-helper", "cat-file", str(src)]
        else:
            pytest.skip("lz4-compressed apt list and no lz4 tool")
        with open(plain, "wb") as out:
            subprocess.run(cmd, stdout=out, check=True, timeout=120)
        src = plain
    with open_index(src) as stream:
        index = parse_deb_packages(stream, arch)
    assert len(index) > 1000
    v = verifier(tmp_path, {"debian13": [str(src)]})
    wanted = [n for n in ("bash", "coreutils", "openssh-server", "systemd") if n in index.names]
    r = v.verify([*wanted, "openssh-servr"], os="debian", dist="debian13", arch=arch)
    assert r.found == wanted and r.missing == ["openssh-servr"]
    if "openssh-server" in index.names:
        assert r.suggestions["openssh-servr"][0] == "openssh-server"
    virtual = next((k for k in ("mail-transport-agent", "awk", "c-compiler") if k in index.provides), None)
    if virtual:
        assert v.verify([virtual], os="debian", dist="debian13", arch=arch).verified


# --------------------------------------------------------------------------- pure functions


def test_parsers_directly() -> None:
    import io

    idx = parse_deb_packages(io.BytesIO(deb_index(DEB_PACKAGES)), "amd64")
    assert "not-a-real-package" not in idx.names
    assert idx.names["openssh-server"] == ["1:9.6p1-3ubuntu13"]
    assert idx.provides["rsh-client"] == ["openssh-client"]
    rp = parse_rpm_primary(io.BytesIO(rpm_primary(RPM_PACKAGES)), "x86_64")
    assert rp.names["kernel"] == ["6.6.57.1-6.azl3", "6.6.64.2-1.azl3"]
    assert rp.names["systemd"] == ["1:255-20.azl3"]
    assert "glibc" not in rp.provides and "pkgconfig(blkid)" not in rp.provides
    with pytest.raises(Exception, match="not a Debian Packages"):
        parse_deb_packages(io.BytesIO(b"<html>\n\n<body>Welcome to the portal</body>\n\n</html>\n"), "amd64")
    assert len(parse_deb_packages(io.BytesIO(b""), "amd64")) == 0
    with pytest.raises(Exception, match="not an RPM primary"):
        parse_rpm_primary(io.BytesIO(b"<html><body>nope</body></html>"), "x86_64")
    bomb = b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaa">]><metadata>&a;</metadata>'
    with pytest.raises(Exception, match="entity"):
        parse_rpm_primary(io.BytesIO(bomb), "x86_64")


def test_version_pin_candidates() -> None:
    assert ("kernel-64k", "6.6.57.1-6.azl3") in version_pin_candidates("kernel-64k-6.6.57.1-6.azl3.aarch64.rpm")
    assert version_pin_candidates("util-linux-devel-2.40.2-3.emt3")[-1] == ("util-linux-devel", "2.40.2-3.emt3")
    assert version_pin_candidates("pkg=1.2") == [("pkg", "1.2")]
    assert version_pin_candidates("openvino_2025.3.0.19807") == [("openvino", "2025.3.0.19807")]
    assert version_pin_candidates("openssh-server") == []
    # Two dashes after the number is not a version: linux-image-6.11.0-17-generic keeps its name.
    assert ("linux-image", "6.11.0-17-generic") not in version_pin_candidates("linux-image-6.11.0-17-generic")


def test_source_specs_and_defaults() -> None:
    s = RepoSource.parse("deb+https://mirror.example/elxr?codename=aria&component=main non-free-firmware")
    assert s.kind == "deb" and s.codenames == ("aria",) and s.components == ("main", "non-free-firmware")
    assert [u.location for u in s.units("deb", "aarch64")] == [
        "https://mirror.example/elxr/dists/aria/main/binary-arm64",
        "https://mirror.example/elxr/dists/aria/non-free-firmware/binary-arm64"]
    assert RepoSource.parse("rpm+https://x/{arch}/os").units("rpm", "aarch64")[0].location == "https://x/aarch64/os"
    assert RepoSource.parse("https://x/repodata/repomd.xml").base == "https://x"
    assert RepoSource.parse("/srv/Packages.gz").kind == "index"
    for bad in ("deb+https://x/debian", "ftp://x/Packages", "deb+https://x?codename=a&bogus=1"):
        with pytest.raises(ValueError):
            RepoSource.parse(bad)
    assert set(DEFAULT_SOURCES) == {"azl3", "emt3", "elxr12", "ubuntu24", "ubuntu26", "debian13", "el10"}
    from image_composer_mcp.server.knowledge.package_names import package_type

    for dist, specs in DEFAULT_SOURCES.items():
        for arch in ("x86_64", "aarch64"):
            units = [u for spec in specs for u in RepoSource.parse(spec).units(package_type(dist) or "", arch)]
            assert units or (dist, arch) == ("emt3", "aarch64")
            assert all(u.location.startswith(("http://", "https://")) for u in units)
    ubuntu_arm = [u.location for spec in DEFAULT_SOURCES["ubuntu24"]
                  for u in RepoSource.parse(spec).units("deb", "aarch64")]
    assert ubuntu_arm and all("ports.ubuntu.com" in loc for loc in ubuntu_arm)


def test_invalid_configured_source_is_reported_not_fatal(tmp_path: Path) -> None:
    v = verifier(tmp_path, {"ubuntu24": ["deb+https://x/ubuntu"]})
    r = v.verify(["curl"], os="ubuntu", dist="ubuntu24", arch="x86_64")
    assert not r.verified and r.unchecked == ["curl"] and "invalid source" in (r.sources[0].error or "")


def test_name_knowledge() -> None:
    assert equivalents("docker")[:3] == ["docker.io", "docker-ce", "moby-engine"]
    assert "openssh-server" in equivalents("openssh")
    assert "linux-image-amd64" in equivalents("kernel")
    assert "openssl-devel" in equivalents("libssl-dev")
    assert "foo-devel" in spelling_variants("libfoo-dev")
    assert "libfoo-dev" in spelling_variants("foo-devel")


def test_packages_from_template() -> None:
    data = {"systemConfig": {"packages": ["a", "b", "a", "", 3], "kernel": {"name": "kernel", "packages": ["k"]}}}
    assert packages_from_template(data) == ["a", "b", "k"]
    assert packages_from_template({}) == []
    if not TEMPLATES.is_dir():
        pytest.skip("shared reference templates not present")
    tpl = yaml.safe_load((TEMPLATES / "ubuntu24-x86_64-minimal-raw.yml").read_text())
    pkgs = packages_from_template(tpl)
    assert "openssh-server" in pkgs and "linux-image-generic-hwe-24.04" in pkgs
