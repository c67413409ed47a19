"""Static network addresses and name servers (server/composer/parse_network.py, server/knowledge/static_network.py,
system_settings.yaml ``dns servers``): an address is read by the role its words give it (an address, a gateway, a
netmask) and the interface named beside it; it is written for the network manager the image runs; an edit keeps the
part it does not say; "use dhcp" takes it out again; what cannot be written is said. Rules about kinds of words and
shapes of addresses, not phrases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import unmet, want_from_spec
from image_composer_mcp.server.composer.answers import summarize
from image_composer_mcp.server.composer.compose import apply_instruction
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.static_network import (
    NETWORKD,
    NETWORKMANAGER,
    StaticAddress,
    command,
    manager_for,
    read,
    read_all,
)

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _statics(spec) -> list[dict]:
    return [c["network"] for c in spec.configurations if c.get("network")]


def _commands(data: dict) -> list[str]:
    return [str(c.get("cmd")) for c in data["systemConfig"].get("configurations") or []]


@pytest.mark.parametrize(("text", "interface", "address", "gateway"), [
    ("an ubuntu edge gateway with a static ip of 192.168.1.50/24, gateway 192.168.1.1", "", "192.168.1.50/24",
     "192.168.1.1"),
    ("azure linux server with eth0 at 10.0.0.5/16", "eth0", "10.0.0.5/16", ""),
    ("debian box, 172.16.4.2/20 on enp3s0 and the default gateway is 172.16.0.1", "enp3s0", "172.16.4.2/20",
     "172.16.0.1"),
    ("set the ip address to 10.1.2.3/8", "", "10.1.2.3/8", ""),
    ("use 192.168.0.10/24 as its static ip, router 192.168.0.1", "", "192.168.0.10/24", "192.168.0.1"),
    ("static ip 192.168.10.20 netmask 255.255.0.0", "", "192.168.10.20/16", ""),
    ("give end0 a fixed address of 10.20.30.40/24", "end0", "10.20.30.40/24", ""),  # a board's predictable name
    ("assign 10.0.0.5/24 to eth0", "eth0", "10.0.0.5/24", ""),
    ("configure enp0s3 with 192.168.56.10/24", "enp0s3", "192.168.56.10/24", ""),
    ("static networking on eth0 (10.0.0.2/24, gw 10.0.0.1)", "eth0", "10.0.0.2/24", "10.0.0.1"),
    ("give it the address 192.168.1.20 with a /24 mask", "", "192.168.1.20/24", ""),
    ("set the ip to 10.0.0.5 prefix length 16", "", "10.0.0.5/16", ""),
    ("debian nas on 192.168.1.5/24", "", "192.168.1.5/24", ""),  # a machine's address with its network's length
    # a host by its last part in the network said; "the router at" is a gateway, never the routing role
    ("put it on the 10.20.30.0/24 network as .15 with the router at .1", "", "10.20.30.15/24", "10.20.30.1"),
    ("debian on the 192.168.8.0/24 lan, eth0 .20, gateway .254", "eth0", "192.168.8.20/24", "192.168.8.254"),
    ("eth0 at 10.0.0.5/24 with the router at 10.0.0.1", "eth0", "10.0.0.5/24", "10.0.0.1"),
    ("arm64 debian box with a static ip, 192.168.1.40/24, and ssh", "", "192.168.1.40/24", ""),  # in apposition
    ("a static ip of 10.0.7.7/24 via 10.0.7.1", "", "10.0.7.7/24", "10.0.7.1"),  # via, as ip-route says it
    ("add a second interface eth1 with 10.9.0.1/16", "eth1", "10.9.0.1/16", ""),
])
def test_an_address_is_read_by_its_role_with_its_interface_and_gateway(text, interface, address, gateway):
    spec = parse_request(text)
    assert _statics(spec) == [{"interface": interface, "address": address, "gateway": gateway}]
    assert not spec.unparsed
    assert not any(c.get("setting") in ("dns servers", "routing role") for c in spec.configurations)


def test_each_interface_gets_its_own_address_and_the_gateway_goes_to_the_network_holding_it():
    spec = parse_request("eth0 10.0.0.5/24 and eth1 192.168.2.1/24, gateway 192.168.2.254")
    assert _statics(spec) == [{"interface": "eth0", "address": "10.0.0.5/24", "gateway": ""},
                              {"interface": "eth1", "address": "192.168.2.1/24", "gateway": "192.168.2.254"}]


def test_an_address_without_a_prefix_takes_24_and_says_so():
    spec = parse_request("debian with a static ip 192.168.5.5")
    assert _statics(spec)[0]["address"] == "192.168.5.5/24"
    assert any("no prefix length or netmask said, /24 taken" in n for n in spec.notes)
    assert any("every wired interface" in n for n in spec.notes)  # no interface named: said where it goes


@pytest.mark.parametrize(("text", "said"), [
    ("static ip 10.0.0.0/8", "is the network address of 10.0.0.0/8"),
    ("eth0 at 10.0.0.5/24, gateway 10.9.9.9", "gateway 10.9.9.9 is not in 10.0.0.0/24"),
    ("static ip 10.0.0.5 netmask 255.0.255.0", "not a netmask"),
    ("debian 13 with a static ip", "static ip: no address said"),
])
def test_what_cannot_be_written_is_said(text, said):
    spec = parse_request(text)
    assert any(said in u for u in spec.unparsed), spec.unparsed
    assert not _statics(spec)


@pytest.mark.parametrize("text", [
    "allow ssh from 10.0.0.0/8 only",  # a firewall's source
    "ntp server 10.0.0.1",
    "send logs to 10.0.0.5:514",
    "mount 10.0.0.5:/exports/home at /home",
    "an ubuntu iot gateway with mosquitto",  # the use case, no address
    "a nas on the 192.168.1.0/24 network",  # a network's address, no machine's
])
def test_other_addresses_are_not_static_ones(text):
    assert not _statics(parse_request(text))


@pytest.mark.parametrize(("text", "servers"), [
    ("ubuntu with dns servers 1.1.1.1 and 9.9.9.9", "1.1.1.1 9.9.9.9"),
    ("use 8.8.8.8 as the dns server", "8.8.8.8"),
    ("nameserver 10.0.0.2", "10.0.0.2"),
    ("use 1.1.1.1 and 1.0.0.1 for dns", "1.1.1.1 1.0.0.1"),
    ("eth0 at 10.0.0.5/24, gateway 10.0.0.1 and dns 10.0.0.1, 1.1.1.1", "10.0.0.1 1.1.1.1"),
])
def test_name_servers_are_resolveds_global_dns(text, servers):
    spec = parse_request(text)
    (entry,) = [c for c in spec.configurations if c.get("setting") == "dns servers"]
    assert f"[Resolve]\\nDNS={servers}\\n' > /etc/systemd/resolved.conf.d/90-dns.conf" in entry["cmd"]
    assert entry["packages"] == ["systemd-resolved"] and not spec.unparsed


def test_a_dns_server_the_image_runs_is_no_setting_and_a_host_name_is_said_not_written():
    assert not parse_request("a dns server for the lan").configurations
    spec = parse_request("dns pointing at dns.example.com")
    assert not spec.configurations and any("only addresses are taken" in u for u in spec.unparsed)


@pytest.mark.parametrize(("template", "manager", "package"), [
    ("ubuntu26-x86_64-minimal-base-raw", NETWORKD, None),
    ("debian13-x86_64-minimal-base-raw", NETWORKD, None),
    ("azl3-x86_64-minimal-base-raw", NETWORKD, "systemd-networkd"),
    ("emt3-x86_64-minimal-base-raw", NETWORKD, "systemd-networkd"),
    ("el10-x86_64-minimal-base-raw", NETWORKMANAGER, None),
    ("ubuntu24-x86_64-desktop-workstation-raw", NETWORKMANAGER, None),  # NetworkManager installed: it manages
])
def test_the_address_is_written_for_the_network_manager_the_image_runs(template, manager, package):
    done = apply_instruction(_template(template), "eth0 at 10.0.0.5/24, gateway 10.0.0.1").data
    (cmd,) = [c for c in _commands(done) if read(c)]
    assert read(cmd) == StaticAddress("eth0", "10.0.0.5/24", "10.0.0.1")
    if manager == NETWORKD:
        assert "/etc/systemd/network/10-static-eth0.network" in cmd and "systemctl enable systemd-networkd" in cmd
    else:
        assert "/etc/NetworkManager/system-connections/static-eth0.nmconnection" in cmd and "chmod 600" in cmd
    if package:
        assert package in done["systemConfig"]["packages"]


def test_an_edit_keeps_the_part_it_does_not_say_and_dhcp_takes_the_address_out():
    first = apply_instruction(_template("ubuntu26-x86_64-minimal-base-raw"),
                              "static ip 192.168.1.50/24 on eth0, gateway 192.168.1.1").data
    second = apply_instruction(first, "change the gateway to 192.168.1.254").data
    assert read_all(_commands(second)) == [StaticAddress("eth0", "192.168.1.50/24", "192.168.1.254")]
    third = apply_instruction(second, "change the ip to 192.168.1.60").data  # the one address there, its interface
    assert read_all(_commands(third)) == [StaticAddress("eth0", "192.168.1.60/24", "192.168.1.254")]
    back = apply_instruction(third, "switch eth0 back to dhcp")
    assert not read_all(_commands(back.data)) and any(c.startswith("took out static address on eth0") for c in back.changes)
    again = apply_instruction(back.data, "use dhcp instead")
    assert any("nothing to take out: the image has no static address" in c for c in again.changes)


def test_a_gateway_alone_on_an_image_without_an_address_is_a_problem_said():
    done = apply_instruction(_template("debian13-x86_64-minimal-base-raw"), "set the gateway to 10.0.0.1")
    assert not read_all(_commands(done.data))
    assert any("no static address to give it" in p for p in done.problems)


def test_adherence_checks_what_the_address_gives_and_a_question_is_answered_from_the_template():
    text = "eth1 at 10.0.0.5/24, gateway 10.0.0.1"
    spec = parse_request(text)
    done = apply_instruction(_template("el10-x86_64-minimal-base-raw"), text).data
    want = want_from_spec(spec, "el10")
    assert not unmet(done, want)
    assert unmet(_template("el10-x86_64-minimal-base-raw"), want) == [
        "no static address 10.0.0.5/24 on eth1, gateway 10.0.0.1"]
    assert "static address 10.0.0.5/24 on eth1, gateway 10.0.0.1" in summarize(done, "what ip does it have?")
    assert "by DHCP" in summarize(_template("el10-x86_64-minimal-base-raw"), "what's the network setup?")


def test_commands_read_back_for_both_managers():
    static = StaticAddress("", "10.0.0.5/16", "10.0.0.1")
    for manager in (NETWORKD, NETWORKMANAGER):
        assert read(command(static, manager)) == static
    assert re.search(r"Name=en\* eth\*", command(static, NETWORKD))  # every wired interface, as the defaults match
    assert manager_for("redhat-compatible-distro", []) == NETWORKMANAGER and manager_for("debian", ["vim"]) == NETWORKD


def test_an_ipv6_address_is_said_not_written_and_never_read_as_ipv6_switched_on():
    spec = parse_request("ipv6 address 2001:db8::5/64 on eth0")
    assert not spec.configurations and not spec.notes
    assert len(spec.unparsed) == 1 and "a static IPv6 address is not written" in spec.unparsed[0]


def test_an_edit_of_the_prefix_alone_keeps_the_host_and_the_static_setup_of_one_interface_goes():
    first = apply_instruction(_template("ubuntu26-x86_64-minimal-base-raw"),
                              "eth0 at 192.168.3.3/24 and eth1 at 10.9.0.1/16").data
    second = apply_instruction(first, "drop the static config on eth1").data
    assert read_all(_commands(second)) == [StaticAddress("eth0", "192.168.3.3/24")]
    third = apply_instruction(second, "change the netmask to 255.255.0.0")
    assert read_all(_commands(third.data)) == [StaticAddress("eth0", "192.168.3.3/16")] and not third.problems
    alone = apply_instruction(_template("ubuntu26-x86_64-minimal-base-raw"), "change the netmask to 255.255.0.0")
    assert any("no static address to give it" in p for p in alone.problems)


def test_a_model_is_asked_for_the_targets_network_manager_and_for_a_part_alone_to_keep_the_rest():
    from image_composer_mcp.server.agent.llm_draft import request_hints

    (hint,) = [h for h in request_hints(parse_request("rocky 10 with eth0 at 10.0.0.5/24, gateway 10.0.0.1"))
               if "static" in h]
    assert "static-eth0.nmconnection" in hint and "address1=10.0.0.5/24,10.0.0.1" in hint  # el10: NetworkManager
    (hint,) = request_hints(parse_request("change the gateway to 10.0.0.254"))
    assert "set the gateway 10.0.0.254 and keep the rest" in hint


def test_dhcp_on_one_interface_takes_out_only_its_address_and_search_domains_are_resolveds():
    spec = parse_request("it should get its address from dhcp on eth0 and have 10.0.0.2/24 on eth1")
    removed = [c for c in spec.configurations if c.get("remove")]
    assert [c["label"] for c in removed] == ["static address on eth0 (DHCP, the template's own, stays)"]
    assert _statics(spec) == [{"interface": "eth1", "address": "10.0.0.2/24", "gateway": ""}]
    spec = parse_request("dns 10.0.0.1 and search domains corp.example.com and lab.example.com")
    (entry,) = [c for c in spec.configurations if c.get("setting") == "dns search domains"]
    assert "[Resolve]\\nDomains=corp.example.com lab.example.com\\n" in entry["cmd"]


def test_interfaces_said_by_name_with_dhcp_or_an_address_are_read_whole():
    spec = parse_request("debian 13 with two network interfaces, eth0 dhcp and eth1 static 10.0.0.5/24")
    assert not spec.unparsed
    labels = [c["label"] for c in spec.configurations]
    assert labels == ["static address on eth0 (DHCP, the template's own, stays)", "static address 10.0.0.5/24 on eth1"]
    assert not parse_request("ubuntu 24.04 minimal image, ens3 static 172.20.0.10/16, gw 172.20.0.1").unparsed
