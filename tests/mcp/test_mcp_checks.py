"""validate_template and verify_packages through a real mcp.Client, with a real HTTP package repository."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.transport.app import create_app
from mcp import Client

from tests.conftest import MINIMAL_TEMPLATE, write_template

pytestmark = pytest.mark.anyio

PACKAGES = "".join(
    f"Package: {name}\nVersion: 1.0\nArchitecture: {arch}\n{extra}\n"
    for name, arch, extra in [
        ("openssh-server", "amd64", "Provides: ssh-server\n"),
        ("docker.io", "amd64", ""),
        ("nginx", "amd64", ""),
        ("ca-certificates", "all", ""),
        ("cloud-init", "all", ""),
    ]
)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def repo(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Packages").write_text(PACKAGES)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/Packages"
    server.shutdown()


@pytest.fixture
async def client(tmp_path: Path, repo: str):
    templates = tmp_path / "templates"
    templates.mkdir()
    write_template(templates, "good", packages="openssh-server, nginx")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(tmp_path / "c")},
                             overrides={"packages.sources": {"ubuntu24": [repo]}})
    async with Client(create_app(settings)) as c:
        yield c


async def test_validate_inline_yaml_and_indexed_name(client):
    good = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="openssh-server")
    r = await client.call_tool("validate_template", {"yaml": good})
    assert not r.is_error and r.structured_content["valid"] is True
    assert "is valid" in r.content[0].text
    r = await client.call_tool("validate_template", {"name": "good"})
    assert r.structured_content["valid"] and r.structured_content["template"] == "good"


async def test_validate_reports_positions_and_hints(client):
    bad = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="vim").replace(
        "arch: x86_64", "arch: amd64").replace("  packages:", "  pakages:")
    r = await client.call_tool("validate_template", {"yaml": bad})
    data = r.structured_content
    assert data["valid"] is False and data["error_count"] >= 2
    arch = next(e for e in data["errors"] if e["path"] == "$.target.arch")
    assert arch["line"] == 10 and "x86_64" in (arch["hint"] or "") + arch["message"]
    typo = next(e for e in data["errors"] if "pakages" in e["message"] or "pakages" in e["path"])
    assert "packages" in (typo["hint"] or "")
    assert "INVALID" in r.content[0].text and "line 10" in r.content[0].text


@pytest.mark.parametrize("payload", ["", "key: [unclosed", "- just\n- a list\n", "\x00\x01binary", "a: " + "x" * 2_000_000])
async def test_validate_hostile_input_never_breaks_the_server(client, payload):
    r = await client.call_tool("validate_template", {"yaml": payload})
    assert not r.is_error and r.structured_content["valid"] is False
    assert r.structured_content["errors"][0]["message"]
    ok = await client.call_tool("validate_template", {"name": "good"})
    assert ok.structured_content["valid"]


async def test_validate_argument_errors(client):
    r = await client.call_tool("validate_template", {})
    assert r.is_error and "exactly one of" in r.content[0].text
    r = await client.call_tool("validate_template", {"name": "goood"})
    assert r.is_error and "did you mean good" in r.content[0].text


async def test_verify_packages_against_a_real_repository(client):
    r = await client.call_tool("verify_packages", {"packages": ["openssh-servr", "nginx", "ssh-server", "docker"],
                                                   "dist": "ubuntu24", "arch": "x86_64"})
    data = r.structured_content
    assert data["verified"] is True
    assert set(data["found"]) == {"nginx", "ssh-server"}
    assert set(data["missing"]) == {"openssh-servr", "docker"}
    assert data["suggestions"]["openssh-servr"][0] == "openssh-server"
    assert "docker.io" in data["suggestions"]["docker"]
    assert "openssh-server" in r.content[0].text


async def test_verify_packages_of_an_indexed_template(client):
    r = await client.call_tool("verify_packages", {"name": "good"})
    data = r.structured_content
    assert data["dist"] == "ubuntu24" and set(data["found"]) == {"openssh-server", "nginx"}


async def test_verify_packages_unreachable_repository_is_never_a_false_missing(tmp_path):
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(tmp_path), "OIC_AI_CACHE_DIR": str(tmp_path / "c")},
                             overrides={"packages.sources": {"ubuntu24": ["http://127.0.0.1:9/Packages"]},
                                        "packages.timeout": 2})
    async with Client(create_app(settings)) as c:
        r = await c.call_tool("verify_packages", {"packages": ["nginx"], "dist": "ubuntu24"})
        data = r.structured_content
        assert data["verified"] is False and data["missing"] == [] and data["unchecked"] == ["nginx"]


async def test_verify_packages_argument_errors(client):
    r = await client.call_tool("verify_packages", {"dist": "ubuntu24"})
    assert r.is_error and "no packages to verify" in r.content[0].text
    r = await client.call_tool("verify_packages", {"packages": ["nginx"]})
    assert r.is_error and "which distribution" in r.content[0].text
