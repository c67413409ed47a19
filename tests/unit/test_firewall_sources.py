"""A service or port let in from some addresses alone: read from the words, written for firewalld and ufw with the
rule that let it in from anywhere taken out, checked by adherence and answered back."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import lets_in, unmet, want_from_spec
from image_composer_mcp.server.composer.answers import summarize
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.firewall_sources import without_general
from image_composer_mcp.server.composer.request_parser import parse_request

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _library(name: str) -> dict:
    return yaml.safe_load((LIBRARY / name).read_text(encoding="utf-8"))


def _commands(data: dict) -> list[str]:
    return [str(c.get("cmd")) for c in data["systemConfig"].get("configurations") or [] if isinstance(c, dict)]


@pytest.mark.parametrize(("text", "opened"), [
    ("el10 where ssh is only allowed from 10.0.0.0/8", ["ssh from 10.0.0.0/8"]),
    ("allow ssh from 192.168.1.0/24 only", ["ssh from 192.168.1.0/24"]),
    ("restrict ssh to 10.0.0.0/8", ["ssh from 10.0.0.0/8"]),
    ("postgres reachable only from 10.1.0.0/16", ["postgresql from 10.1.0.0/16"]),
    ("port 5432/tcp only from 10.0.0.0/8 and 172.16.0.0/12", ["5432/tcp from 10.0.0.0/8", "5432/tcp from 172.16.0.0/12"]),
    ("ssh access only from the 10.20.0.0/16 network", ["ssh from 10.20.0.0/16"]),
    ("and postgres, only reachable from 10.0.0.0/8", ["postgresql from 10.0.0.0/8"]),  # a comma before the state
    # numbers alone after the verb are ports when a source follows; "for" before an address is a source
    ("open 3306 for 10.0.0.0/24 only", ["3306/tcp from 10.0.0.0/24"]),
    ("allow 80 and 443 from 10.1.0.0/16", ["80/tcp from 10.1.0.0/16", "443/tcp from 10.1.0.0/16"]),
])
def test_a_service_said_from_addresses_alone_is_let_in_from_them_and_needs_a_firewall(text, opened):
    spec = parse_request(text, known_packages={"postgresql"})
    assert spec.open_ports == opened and not spec.unparsed
    assert "firewall" in spec.add_groups


def test_the_software_of_a_restriction_is_still_installed():
    spec = parse_request("el10 where ssh is only allowed from 10.0.0.0/8")
    assert "ssh" in spec.add_groups


def test_firewalld_gets_a_rich_rule_and_loses_the_service_for_everyone():
    result = compose("el10 web server with httpd, restrict ssh to 10.0.0.0/8",
                     _library("el10-x86_64-web-server-httpd-raw.yml"))
    commands = " ".join(_commands(result.data))
    assert 'source address="10.0.0.0/8" service name="ssh" accept' in commands
    assert "--remove-service=ssh" in commands and "--add-service=ssh" not in commands
    assert "--add-service=http --add-service=https" in commands  # the other services stay
    assert not unmet(result.data, want_from_spec(parse_request("restrict ssh to 10.0.0.0/8")))


def test_ufw_gets_a_rule_from_the_source_before_it_is_turned_on_and_the_rule_for_everyone_goes():
    result = compose("ubuntu 24.04 with grafana, allow ssh from 192.168.1.0/24 only",
                     _library("ubuntu24-x86_64-monitoring-prometheus-grafana-raw.yml"))
    commands = _commands(result.data)
    rule = "ufw allow from 192.168.1.0/24 to any port 22 proto tcp"
    assert rule in commands
    on = next(i for i, c in enumerate(commands) if "ENABLED=yes" in c)
    assert commands.index(rule) < on
    assert not any("ufw allow 22/tcp" in c for c in commands)
    assert any("ufw allow 3000/tcp" in c for c in commands)  # grafana's port stays open
    assert "22/tcp from 192.168.1.0/24" in summarize(result.data, "what does the firewall let in?")


def test_a_restriction_an_image_cannot_enforce_is_said_not_applied():
    result = compose("emt3 with postgres reachable only from 10.1.0.0/16",
                     _library("emt3-x86_64-minimal-base-raw.yml"))
    assert any("postgresql from 10.1.0.0/16 not applied" in c and "iptables" in c for c in result.changes)


def test_a_restriction_on_debian_is_a_rule_of_its_nftables_ruleset():
    result = compose("debian 13 with postgres reachable only from 10.1.0.0/16",
                     _library("debian13-x86_64-minimal-base-raw.yml"))
    written = " ".join(_commands(result.data))
    assert "ip saddr 10.1.0.0/16 tcp dport 5432 accept" in written
    assert lets_in(written, "postgresql from 10.1.0.0/16") and not lets_in(written, "postgresql")
    assert "5432/tcp from 10.1.0.0/16" in summarize(result.data, "what does the firewall let in?")


@pytest.mark.parametrize(("cmd", "what", "left"), [
    ("firewall-offline-cmd --add-service=http --add-service=ssh", "ssh", "firewall-offline-cmd --add-service=http"),
    ("firewall-offline-cmd --add-service=ssh && systemctl enable firewalld", "ssh", "systemctl enable firewalld"),
    ("ufw allow OpenSSH && ufw allow 'Nginx Full'", "ssh", "ufw allow 'Nginx Full'"),
    ("ufw allow 22/tcp && ufw allow 3000/tcp", "ssh", "ufw allow 3000/tcp"),
    ("ufw allow 5432/tcp", "5432/tcp", ""),
    ("ufw allow 2222/tcp", "ssh", "ufw allow 2222/tcp"),  # another port is no rule for ssh
])
def test_the_rules_letting_a_service_in_from_anywhere_are_taken_out_of_a_command(cmd, what, left):
    assert without_general(cmd, what) == left


def test_a_source_rule_lets_in_only_from_its_source():
    written = "firewall-offline-cmd --add-rich-rule='rule family=\"ipv4\" source address=\"10.0.0.0/8\" service name=\"ssh\" accept'"
    assert lets_in(written, "ssh from 10.0.0.0/8") and lets_in(written, "22/tcp from 10.0.0.0/8")
    assert not lets_in(written, "ssh from 192.168.0.0/16") and not lets_in(written, "ssh")


def test_an_edit_restricts_what_the_template_already_lets_in():
    base = _library("el10-x86_64-web-server-httpd-raw.yml")
    result = apply_instruction(base, "only allow ssh from 10.0.0.0/8")
    commands = " ".join(_commands(result.data))
    assert 'source address="10.0.0.0/8" service name="ssh"' in commands and "--add-service=ssh" not in commands
    assert any("taken out" in c for c in result.changes)
