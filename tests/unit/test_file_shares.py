"""Folders the image serves (server/composer/parse_shares.py, server/knowledge/file_shares.py): a folder said
shared over Samba or exported over NFS, by a verb, a passive or a noun, is a share section of smb.conf or a line of
/etc/exports, with its server; who may mount it, read-only and guest access are read after it; an edit takes one
out again; the system's own places are never served; another machine's share mounted here stays the mounts'."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.answers import summarize
from image_composer_mcp.server.composer.compose import apply_instruction
from image_composer_mcp.server.composer.request_parser import parse_request

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _shares(spec) -> list[dict]:
    return [c for c in spec.configurations if str(c.get("setting", "")).startswith(("samba share", "nfs share"))]


@pytest.mark.parametrize(("text", "written"), [
    ("debian 13 file server sharing /srv/share over samba", "[share]\\npath = /srv/share\\nread only = no\\nguest ok = no"),
    ("share /srv/media over smb with guest access", "[media]\\npath = /srv/media\\nread only = no\\nguest ok = yes"),
    ("a samba share named music at /srv/audio, read-only", "[music]\\npath = /srv/audio\\nread only = yes"),
    ("/srv/public shared via samba", "[public]\\npath = /srv/public\\n"),
    ("export /srv/data over nfs to 10.0.0.0/24, read-only", "echo '/srv/data 10.0.0.0/24(ro,sync,no_subtree_check)'"),
    ("an nfs export of /srv/backups for 192.168.1.0/24", "echo '/srv/backups 192.168.1.0/24(rw,"),
    ("/srv/data is exported over nfs", "echo '/srv/data *(rw,"),
])
def test_a_folder_said_shared_is_served_by_its_protocols_server(text, written):
    spec = parse_request(text)
    (entry,) = _shares(spec)
    assert written in entry["cmd"] and entry["cmd"].startswith("mkdir -p '/srv/")
    assert entry["packages"] == (["samba"] if "samba" in entry["setting"] else ["nfs-kernel-server"])
    assert not spec.unparsed


def test_what_the_template_cannot_hold_is_said():
    assert any("smbpasswd" in n for n in parse_request("share /srv/media over samba").notes)  # a user's own password
    assert any("every host" in n for n in parse_request("export /srv/data over nfs").notes)  # exported to everyone


def test_the_systems_own_places_are_never_served():
    spec = parse_request("share /etc over samba")
    assert not _shares(spec) and any(u.startswith("sharing /etc:") for u in spec.unsupported)


def test_a_share_of_another_machine_taken_out_stays_the_mounts():
    spec = parse_request("remove the nfs share at /home")
    assert not _shares(spec)
    assert [c.get("label") for c in spec.configurations] == ["network share at /home"]


@pytest.mark.parametrize(("template", "server"), [("debian13-x86_64-minimal-base-raw", "samba"),
                                                  ("el10-x86_64-minimal-base-raw", "samba")])
def test_a_share_is_written_answered_and_taken_out_again(template, server):
    done = apply_instruction(_template(template), "share /srv/media over samba with guest access").data
    assert server in done["systemConfig"]["packages"]
    assert "samba [media] /srv/media with guest access" in summarize(done, "what is shared?")
    back = apply_instruction(done, "stop sharing /srv/media")
    assert not any("/srv/media" in str(c.get("cmd")) for c in back.data["systemConfig"].get("configurations") or [])
    assert any(c.startswith("took out samba share of /srv/media") for c in back.changes)
    assert not any("nothing to take out" in c for c in back.changes)  # the protocol not said: the other is not named
