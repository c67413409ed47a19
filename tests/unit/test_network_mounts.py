"""Network shares the image mounts (server/composer/parse_network_mounts.py): an NFS share said host:/path and an
SMB one //host/share, mounted at boot by a systemd mount unit with the protocol's client by the target's name;
said without a place or a server, reported; taken out again by an edit. Rules about the shapes of a share and a
place, not phrases."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.compose import apply_instruction
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.system_settings import mount_unit_name

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _mounts(spec) -> list[dict]:
    return [c for c in spec.configurations if str(c.get("setting", "")).startswith("network share")]


@pytest.mark.parametrize(("text", "source", "where", "kind"), [
    ("ubuntu 24.04 image that mounts an nfs share from 10.0.0.5:/exports/home at /home", "10.0.0.5:/exports/home",
     "/home", "nfs"),
    ("debian 13, mount nas.lan:/volume1/media on /mnt/media over nfs", "nas.lan:/volume1/media", "/mnt/media", "nfs"),
    ("el10 with /srv/backup mounted from backup01:/backups", "backup01:/backups", "/srv/backup", "nfs"),  # place first
    ("an smb share //files.corp/public at /mnt/public", "//files.corp/public", "/mnt/public", "cifs"),
    ("mount \\\\fs01\\scans to /mnt/scans", "//fs01/scans", "/mnt/scans", "cifs"),  # Windows' way of writing it
])
def test_a_share_and_its_place_are_a_mount_unit_with_the_protocols_client(text, source, where, kind):
    spec = parse_request(text)
    (entry,) = _mounts(spec)
    unit = mount_unit_name(where)
    assert f"[Mount]\\nWhat={source}\\nWhere={where}\\nType={kind}\\n" in entry["cmd"]
    assert f"> '/etc/systemd/system/{unit}' && systemctl enable '{unit}'" in entry["cmd"]
    assert "_netdev,nofail" in entry["cmd"] and "WantedBy=remote-fs.target" in entry["cmd"]
    assert entry["packages"] == ["nfs-common" if kind == "nfs" else "cifs-utils"]
    # the share's words are no package (the NFS server) and nothing of it is left unread
    assert not spec.add_packages and not spec.add_groups and not spec.unparsed


def test_an_smb_share_needs_credentials_kept_out_of_the_template_unless_it_is_a_guest_share():
    spec = parse_request("mount //nas/team on /mnt/team")
    (entry,) = _mounts(spec)
    assert "credentials=/etc/cifs-credentials" in entry["cmd"]
    assert any("/etc/cifs-credentials on the target" in n and "not written into the template" in n for n in spec.notes)
    guest = parse_request("mount //nas/public on /mnt/public with guest access")
    (entry,) = _mounts(guest)
    assert "Options=_netdev,nofail,guest\\n" in entry["cmd"] and not guest.unparsed and not guest.notes


@pytest.mark.parametrize(("where", "unit"), [("/home", "home.mount"), ("/mnt/nas-1", "mnt-nas\\x2d1.mount"),
                                             ("/srv/my share", "srv-my\\x20share.mount"), ("/", "-.mount")])
def test_the_unit_is_named_as_systemd_escape_names_the_place(where, unit):
    assert mount_unit_name(where) == unit


@pytest.mark.parametrize(("text", "said"), [
    ("debian 13 that mounts nas:/data", "network share nas:/data not mounted: no mount point said"),
    ("ubuntu that mounts an nfs share at /mnt/data", "network share at /mnt/data not mounted: no server said"),
])
def test_a_share_without_its_place_or_its_server_is_reported_not_written(text, said):
    spec = parse_request(text)
    assert not _mounts(spec) and any(n.startswith(said) for n in spec.notes)
    assert "nfs-kernel-server" not in spec.add_packages and "nfs" not in spec.add_packages


@pytest.mark.parametrize("where", ["/", "/boot", "/usr", "/etc"])
def test_the_systems_own_places_are_never_mounted_from_the_network(where):
    spec = parse_request(f"mount nas:/export at {where}")
    assert not _mounts(spec) and any(u.startswith(f"network share nas:/export at {where}:") for u in spec.unsupported)


def test_a_url_is_no_share():
    spec = parse_request("debian kiosk showing https://intranet.local/a:/b")
    assert not _mounts(spec)


@pytest.mark.parametrize(("template", "client"), [("debian13-x86_64-minimal-base-raw", "nfs-common"),
                                                 ("ubuntu26-x86_64-minimal-base-raw", "nfs-common"),
                                                 ("el10-x86_64-minimal-base-raw", "nfs-utils"),
                                                 ("azl3-x86_64-minimal-base-raw", "nfs-utils")])
def test_the_client_is_the_targets_package_and_an_edit_takes_the_share_out_again(template, client):
    done = apply_instruction(_template(template), "mount files.lan:/exports/home at /home").data
    commands = [c["cmd"] for c in done["systemConfig"]["configurations"]]
    assert any("What=files.lan:/exports/home" in c for c in commands)
    assert client in done["systemConfig"]["packages"]
    for undo in ("unmount /home", "remove the nfs mount", "drop the network share at /home"):
        back = apply_instruction(done, undo).data
        assert not any("What=files.lan" in c["cmd"] for c in back["systemConfig"].get("configurations") or []), undo


def test_the_same_place_mounted_again_replaces_the_first_share():
    first = apply_instruction(_template("debian13-x86_64-minimal-base-raw"), "mount a.lan:/one at /mnt/x").data
    second = apply_instruction(first, "mount b.lan:/two at /mnt/x").data
    commands = [c["cmd"] for c in second["systemConfig"]["configurations"]]
    assert any("What=b.lan:/two" in c for c in commands) and not any("What=a.lan:/one" in c for c in commands)
