"""A static address, name servers and a shared folder over a real in-process MCP client (offline provider): asked
for, written for the target's network manager, changed in part by a refinement, answered, and taken out again."""

from __future__ import annotations

import pytest
from image_composer_mcp.server.composer.adherence import unmet
from image_composer_mcp.server.core.yamlsafe import load_mapping
from image_composer_mcp.server.knowledge.static_network import StaticAddress, read_all
from mcp import Client

from tests.mcp.test_agent import make_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client(library_cache):
    async with Client(make_app(library_cache)) as c:
        yield c


def _commands(doc: dict) -> list[str]:
    return [str(c.get("cmd")) for c in doc["systemConfig"].get("configurations") or []]


async def _call(client, tool: str, args: dict) -> dict:
    r = await client.call_tool(tool, args)
    assert not r.is_error, r.content[0].text
    return r.structured_content


async def test_a_static_address_is_written_changed_in_part_answered_and_taken_out(client):
    out = await _call(client, "generate_template", {
        "request": "debian 13 edge box with eth0 at 192.168.10.5/24, gateway 192.168.10.1, dns 192.168.10.1"})
    assert out["valid"], out["errors"]
    doc = load_mapping(out["yaml"]).data
    assert read_all(_commands(doc)) == [StaticAddress("eth0", "192.168.10.5/24", "192.168.10.1")]
    assert any("DNS=192.168.10.1" in c for c in _commands(doc))
    cid = out["conversation_id"]
    changed = await _call(client, "refine_template", {"conversation_id": cid,
                                                      "instruction": "change the gateway to 192.168.10.254"})
    doc = load_mapping(changed["yaml"]).data
    assert read_all(_commands(doc)) == [StaticAddress("eth0", "192.168.10.5/24", "192.168.10.254")]
    asked = await _call(client, "refine_template", {"conversation_id": cid, "instruction": "what ip does it have?"})
    assert "static address 192.168.10.5/24 on eth0, gateway 192.168.10.254" in asked["answer"]
    back = await _call(client, "refine_template", {"conversation_id": cid, "instruction": "use dhcp instead"})
    assert not read_all(_commands(load_mapping(back["yaml"]).data))


async def test_el10_gets_a_networkmanager_keyfile_and_a_share_is_served(client):
    out = await _call(client, "generate_template", {
        "request": "rocky 10 file server with a static ip of 10.0.0.5/24 on eth0, sharing /srv/share over samba"})
    doc = load_mapping(out["yaml"]).data
    assert out["valid"], out["errors"]
    assert any("/etc/NetworkManager/system-connections/static-eth0.nmconnection" in c for c in _commands(doc))
    assert any("[share]\\npath = /srv/share\\n" in c for c in _commands(doc))
    assert unmet(doc, {"addressed": [{"interface": "eth0", "address": "10.0.0.5/24"}], "has": ["samba"]}) == []
    assert any("smbpasswd" in n for n in out["notes"])  # the Samba password is the target's, said
