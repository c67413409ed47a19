"""The firewall on the nftables families (Debian, eLxr, Azure Linux): the composer's ruleset, written when a
firewall is asked for or named while opening a port, grown by later edits, read back by the adherence check and
the answers, and accepted by nftables' own parser (`nft -c`, when installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import let_in, lets_in, unmet, want_from_spec
from image_composer_mcp.server.composer.answers import summarize
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge import nft_ruleset

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _library(name: str) -> dict:
    return yaml.safe_load((LIBRARY / name).read_text(encoding="utf-8"))


def _rulesets(data: dict) -> list[str]:
    return [str(c["cmd"]) for c in data["systemConfig"].get("configurations") or []
            if isinstance(c, dict) and nft_ruleset.read(str(c.get("cmd") or ""))]


def test_a_ruleset_reads_back_what_it_lets_in():
    cmd = nft_ruleset.command("/etc/nftables.conf", ["22/tcp", "https", "8000-8010/tcp", "dns"])
    assert nft_ruleset.read(cmd) == ("/etc/nftables.conf", ["22/tcp", "443/tcp", "8000-8010/tcp", "53/udp"])
    assert nft_ruleset.read("ufw allow 22/tcp") is None
    assert lets_in(cmd, "https") and lets_in(cmd, "443") and lets_in(cmd, "dns") and not lets_in(cmd, "53/tcp")
    assert "8000-8010/tcp" in let_in(cmd)


def test_a_source_restriction_takes_out_the_rule_from_anywhere():
    cmd, dropped = nft_ruleset.with_entries(nft_ruleset.command("/etc/nftables.conf", ["22/tcp", "80/tcp"]),
                                            ["ssh from 10.0.0.0/8"])
    assert dropped == ["22/tcp"]
    assert nft_ruleset.read(cmd) == ("/etc/nftables.conf", ["80/tcp", "22/tcp from 10.0.0.0/8"])
    assert lets_in(cmd, "ssh from 10.0.0.0/8") and not lets_in(cmd, "ssh")


@pytest.mark.skipif(shutil.which("nft") is None, reason="nftables' nft is not installed (make system-deps installs it)")
def test_nft_accepts_the_ruleset_the_command_writes(tmp_path):
    target = tmp_path / "nftables.conf"
    cmd, _ = nft_ruleset.with_entries(nft_ruleset.command(str(target), [nft_ruleset.SSH]),
                                      ["8080/tcp", "https", "8000-8010/tcp", "ntp", "postgresql from 10.1.0.0/16"])
    # the command as the build runs it, but for enabling the service
    subprocess.run(["sh", "-c", cmd.replace(" && systemctl enable nftables.service", "")], check=True)
    assert "policy drop;" in target.read_text()
    checked = subprocess.run(["nft", "-c", "-f", str(target)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    target.write_text(target.read_text().replace("dport 8080", "dport http-alt-typo"))
    assert subprocess.run(["nft", "-c", "-f", str(target)], capture_output=True).returncode != 0


@pytest.mark.parametrize(("request_", "template", "path"), [
    ("debian 13 minimal image with a firewall", "debian13-x86_64-minimal-base-raw.yml", "/etc/nftables.conf"),
    ("azure linux 3 image with a firewall", "azl3-x86_64-minimal-base-raw.yml", "/etc/sysconfig/nftables.conf"),
])
def test_a_firewall_asked_for_drops_incoming_traffic_but_ssh(request_, template, path):
    result = compose(request_, _library(template))
    (ruleset,) = _rulesets(result.data)
    assert nft_ruleset.read(ruleset) == (path, ["22/tcp"])
    assert "nftables" in result.data["systemConfig"]["packages"]
    assert any(f"an nftables ruleset in {path} dropping incoming traffic" in c for c in result.changes)


def test_a_port_opened_in_the_firewall_of_an_image_without_one_brings_the_firewall():
    base = compose("debian 13 minimal image", _library("debian13-x86_64-minimal-base-raw.yml")).data
    result = apply_instruction(base, "open port 8080 in the firewall")
    (ruleset,) = _rulesets(result.data)
    assert nft_ruleset.read(ruleset) == ("/etc/nftables.conf", ["22/tcp", "8080/tcp"])
    assert any("tcp dport 8080 accept" in c for c in result.changes)
    spec = parse_request("open port 8080 in the firewall")
    assert unmet(result.data, want_from_spec(spec)) == []
    assert "8080/tcp" in summarize(result.data, "what ports are open?")


def test_a_port_opened_without_the_firewall_said_is_not_a_firewall_wish():
    base = compose("debian 13 minimal image", _library("debian13-x86_64-minimal-base-raw.yml")).data
    result = apply_instruction(base, "open port 8080")
    assert _rulesets(result.data) == []
    assert any("8080/tcp not applied: the template has no firewall" in c for c in result.changes)


def test_later_edits_grow_the_one_ruleset():
    data = compose("debian 13 minimal image with a firewall", _library("debian13-x86_64-minimal-base-raw.yml")).data
    for instruction in ("open https in the firewall", "allow ssh only from 10.0.0.0/8", "add a firewall"):
        data = apply_instruction(data, instruction).data
    (ruleset,) = _rulesets(data)
    assert nft_ruleset.read(ruleset) == ("/etc/nftables.conf", ["443/tcp", "22/tcp from 10.0.0.0/8"])


def test_an_nftables_package_without_the_composers_ruleset_is_left_to_the_admin():
    data = compose("debian 13 minimal image", _library("debian13-x86_64-minimal-base-raw.yml")).data
    data["systemConfig"]["packages"].append("nftables")
    result = apply_instruction(data, "open port 8080")
    assert _rulesets(result.data) == []
    assert any("the template's firewall is nftables, whose ruleset is the admin's file" in c for c in result.changes)


@pytest.mark.parametrize(("request_", "template"), [
    ("ubuntu 24.04 hardened web server with nginx", "ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw.yml"),
    ("debian 13 hardened web server with nginx", "debian13-x86_64-minimal-base-raw.yml"),
])
def test_software_a_default_deny_firewall_keeps_out_is_said(request_, template):
    result = compose(request_, _library(template))
    assert "note: the firewall does not let in nginx's http, https; say 'open http and https in the firewall' to " \
           "let them in" in result.changes
    opened = apply_instruction(result.data, "open http and https in the firewall")
    assert not any("does not let in" in c for c in opened.changes)
    # said once: a later edit that leaves the pair as it was does not repeat it
    again = apply_instruction(result.data, "add htop")
    assert not any("does not let in" in c for c in again.changes)


def test_software_with_no_firewall_or_one_that_lets_it_in_is_not_said():
    assert not any("does not let in" in c for c in
                   compose("debian 13 web server with nginx", _library("debian13-x86_64-minimal-base-raw.yml")).changes)
    data = compose("debian 13 minimal image with a firewall allowing mqtt",
                   _library("debian13-x86_64-minimal-base-raw.yml")).data
    assert not any("does not let in" in c for c in apply_instruction(data, "add mosquitto").changes)


def test_ufw_named_on_debian_is_its_firewall_turned_on():
    result = compose("debian 13 box with ufw allowing 22 and 80", _library("debian13-x86_64-minimal-base-raw.yml"))
    commands = [str(c["cmd"]) for c in result.data["systemConfig"]["configurations"]]
    on = next(i for i, c in enumerate(commands) if "ENABLED=yes" in c)
    assert any("ufw allow 80/tcp" in c for c in commands[:on])  # its rules are written before it is turned on
    assert _rulesets(result.data) == [] and "nftables" not in result.data["systemConfig"]["packages"]
    # the firewall asked for later is the ufw the template has, not a second one
    later = apply_instruction(result.data, "open port 8080 in the firewall")
    assert _rulesets(later.data) == [] and "nftables" not in later.data["systemConfig"]["packages"]
    assert any("ufw allow 8080/tcp" in str(c["cmd"]) for c in later.data["systemConfig"]["configurations"])


def test_a_port_for_a_ufw_left_off_is_said_to_guard_nothing_yet():
    data = compose("debian 13 minimal image", _library("debian13-x86_64-minimal-base-raw.yml")).data
    data["systemConfig"]["packages"].append("ufw")
    result = apply_instruction(data, "open port 8443")
    assert any("ufw is installed off, so nothing blocks 8443/tcp yet" in c for c in result.changes)
    assert not any("ENABLED=yes" in str(c["cmd"]) for c in result.data["systemConfig"]["configurations"])


@pytest.mark.parametrize("text", ["a firewall open for http", "firewalld open to https and ssh"])
def test_a_firewall_open_for_services_lets_them_in(text):
    spec = parse_request(f"debian 13 with {text}")
    assert spec.open_ports and not spec.unparsed


def test_a_firewall_asked_for_beside_ufw_on_debian_is_that_ufw():
    data = compose("debian 13 box with ufw", _library("debian13-x86_64-minimal-base-raw.yml")).data
    result = apply_instruction(data, "add a firewall")
    assert "nftables" not in result.data["systemConfig"]["packages"] and _rulesets(result.data) == []
    assert any("the template's ufw fills its role" in c for c in result.changes)



def test_software_that_does_not_listen_as_installed_is_not_said_kept_out():
    """chrony is a client as installed, PostgreSQL listens on localhost: a firewall keeps no one from them."""
    result = compose("debian 13 minimal image with a firewall, chrony and postgres",
                     _library("debian13-x86_64-minimal-base-raw.yml"))
    assert not any("does not let in" in c for c in result.changes)
