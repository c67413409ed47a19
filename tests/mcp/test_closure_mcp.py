"""validate_template(check_build=true) and verify_packages(closure=true) through a real mcp.Client."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.packages.solv_loader import load_solv, solv_unavailable_reason
from image_composer_mcp.server.transport.app import create_app
from mcp import Client

from tests.conftest import MINIMAL_TEMPLATE, write_template
from tests.unit.test_closure import DEB

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(load_solv() is None, reason=f"libsolv unavailable: {solv_unavailable_reason()}")]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
async def client(tmp_path: Path):
    root = tmp_path / "www"
    root.mkdir()
    (root / "Packages").write_text(DEB)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    templates = tmp_path / "templates"
    templates.mkdir()
    write_template(templates, "desk", packages="desktop, app")
    settings = load_settings(env={"OIC_AI_TEMPLATES_DIR": str(templates), "OIC_AI_CACHE_DIR": str(tmp_path / "c")},
                             overrides={"packages.sources": {
                                 "ubuntu24": [f"http://127.0.0.1:{server.server_address[1]}/Packages"]}})
    async with Client(create_app(settings)) as c:
        yield c
    server.shutdown()
    server.server_close()


async def test_validate_check_build_reports_disk_and_closure_errors(client):
    plain = await client.call_tool("validate_template", {"name": "desk"})
    assert plain.structured_content["valid"] is True  # what validation said before this check existed
    r = await client.call_tool("validate_template", {"name": "desk", "check_build": True})
    data = r.structured_content
    assert data["valid"] is False
    [disk] = [e for e in data["errors"] if e["code"] == "build.disk_too_small"]
    assert disk["path"] == "$.disk.size" and disk["line"] and "GiB" in disk["message"]
    assert "INVALID" in r.content[0].text and "build.disk_too_small" not in r.content[0].text
    broken = MINIMAL_TEMPLATE.format(name="x", description="d", keywords="k", packages="wrapper, postfix, exim4")
    r = await client.call_tool("validate_template", {"yaml": broken, "check_build": True})
    codes = {e["code"]: e for e in r.structured_content["errors"]}
    assert "wrapper -> broken" in codes["build.unresolvable"]["message"]
    assert codes["build.unresolvable"]["path"] == "$.systemConfig.packages[0]"
    assert "build.conflict" in codes


async def test_verify_packages_closure_for_a_list_and_a_template(client):
    r = await client.call_tool("verify_packages", {"packages": ["app", "wrapper"], "dist": "ubuntu24",
                                                   "closure": True})
    c = r.structured_content["closure"]
    assert c["checked"] and not c["ok"]
    assert {"app", "libfoo", "base", "mta-first"} <= set(c["package_names"])
    [u] = [p for p in c["problems"] if p["kind"] == "unresolvable"]
    assert u["chain"] == ["wrapper", "broken"]
    libfoo = next(p for p in c["largest"] if p["name"] == "libfoo")
    assert libfoo["chain"] == ["app", "libfoo"] and libfoo["installed_bytes"] == 200 * 1024
    assert "Closure:" in r.content[0].text
    r = await client.call_tool("verify_packages", {"name": "desk", "closure": True})
    c = r.structured_content["closure"]
    assert c["min_disk_bytes"] > 4 * 1024**3 and "holds 3.50GiB" in c["disk"]
    assert [p["kind"] for p in c["problems"]] == ["disk_too_small"]
    r = await client.call_tool("verify_packages", {"name": "desk"})
    assert r.structured_content["closure"] is None
