"""Words that give software a role, sudo without a password, versioned vendor builds, and software a target's
archives do not carry (server/composer/parse_packages.py _role_fillers, parse_system.py, editing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.adherence import unmet, untold
from image_composer_mcp.server.composer.base import asked_groups
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.core.logs import redact
from image_composer_mcp.server.knowledge.loader import load_capabilities
from image_composer_mcp.server.knowledge.package_names import versioned_build

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _packages(data: dict) -> list[str]:
    return [str(p) for p in data["systemConfig"].get("packages") or []]


def _commands(data: dict) -> list[str]:
    return [str(c.get("cmd")) for c in data["systemConfig"].get("configurations") or []]


# ---- a role filled by the software named for it ---------------------------------------------------------
def test_software_named_as_a_role_fills_it_instead_of_the_roles_default():
    debian = _template("debian13-x86_64-minimal-base-raw")
    haproxy = compose("debian with haproxy as a reverse proxy", debian)
    assert "haproxy" in _packages(haproxy.data) and "nginx" not in _packages(haproxy.data)
    chrony = compose("debian with chrony as the ntp client", debian)
    assert "chrony" in _packages(chrony.data) and "linuxptp" not in _packages(chrony.data)
    ubuntu = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    podman = compose("ubuntu 24.04 with podman as the container engine", ubuntu)
    assert "podman" in _packages(podman.data)
    assert not {"docker.io", "containerd", "docker-compose-v2"} & set(_packages(podman.data))


def test_a_known_package_before_a_role_noun_fills_it_and_plain_words_do_not():
    ubuntu = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    lighttpd = compose("ubuntu 24.04 with lighttpd web server", ubuntu)
    assert "lighttpd" in _packages(lighttpd.data) and "nginx" not in _packages(lighttpd.data)
    for request in ("ubuntu 24.04 small web server", "use it as a web server, ubuntu 24.04"):
        assert "nginx" in _packages(compose(request, ubuntu).data), request


def test_an_unknown_name_given_a_role_is_reported_and_no_default_takes_its_place():
    spec = parse_request("ubuntu 24.04 with traefik as the reverse proxy")
    assert "web-server" not in spec.add_groups and "traefik" in spec.unparsed
    assert any("traefik as the reverse proxy" in n for n in spec.notes)


# ---- sudo without a password ----------------------------------------------------------------------------
def test_passwordless_sudo_writes_a_sudoers_file_for_the_user_it_is_said_of():
    ubuntu = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    for request, user in (("ubuntu 24.04 with user bob, passwordless sudo", "bob"),
                          ("give ops passwordless sudo on an ubuntu 24.04 image", "ops"),
                          ("ubuntu 24.04, add user deploy with sudo without a password", "deploy")):
        result = compose(request, ubuntu)
        users = {u["name"]: u for u in result.data["systemConfig"]["users"]}
        assert users[user]["sudo"] is True, request
        assert f"echo '{user} ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/{user}" in _commands(result.data), request
        assert f"chmod 440 /etc/sudoers.d/{user}" in _commands(result.data), request
        assert "sudo" in _packages(result.data)
        assert not any("password for user" in n for n in result.spec.notes), request  # no password was given


def test_passwordless_sudo_after_a_list_of_users_is_said_of_each_and_alone_asks_whom():
    spec = parse_request("debian image with users alice and bob, passwordless sudo")
    assert {u["name"]: u.get("nopasswd") for u in spec.users} == {"alice": True, "bob": True}
    spec = parse_request("debian image with passwordless sudo")
    assert not spec.users and any("for which user" in u for u in spec.unparsed)


def test_removing_the_user_or_its_sudo_takes_its_sudoers_file_out():
    ubuntu = _template("ubuntu24-x86_64-cloud-vm-qcow2-vmdk-raw")
    made = compose("ubuntu 24.04 with users bob and ops, passwordless sudo", ubuntu).data
    gone = apply_instruction(made, "remove user bob").data
    assert not [c for c in _commands(gone) if "sudoers.d/bob" in c]
    assert [c for c in _commands(gone) if "sudoers.d/ops" in c]
    revoked = apply_instruction(gone, "ops should not have sudo")
    assert {u["name"]: u["sudo"] for u in revoked.data["systemConfig"]["users"]} == {"ops": False}
    assert not [c for c in _commands(revoked.data) if "sudoers.d" in c]
    assert "sudo" in _packages(revoked.data)  # the package stays: only the user's right went
    nobody = apply_instruction(revoked.data, "revoke sudo from dev")
    assert any("no user dev" in c for c in nobody.changes) and "dev" not in str(nobody.data["systemConfig"]["users"])


def test_the_sudoers_rule_is_not_taken_for_a_password_when_redacting():
    assert redact("echo 'ops ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/ops").count("NOPASSWD: ALL") == 1
    assert "hunter2" not in redact("password: hunter2") and "hunter2" not in redact("passwd=hunter2")


# ---- versioned vendor builds and software a family does not package -------------------------------------
def test_a_plain_name_names_its_versioned_vendor_build():
    assert versioned_build("openvino", "openvino-2025.3.0") and versioned_build("intel-dlstreamer", "intel-dlstreamer_2025.2.0")
    assert not versioned_build("openvino", "openvino-dev") and not versioned_build("openvino", "openvino")
    emt = _template("emt3-x86_64-ai-video-analytics-dlstreamer-raw")
    request = "emt image with the intel gpu driver and openvino"
    # A library that installs a plain "openvino" somewhere makes the word a package name, not the ai group's word.
    spec = parse_request(request, known_packages=["openvino"])
    assert spec.add_packages == ["openvino"] and "ai" not in spec.add_groups
    assert "ai" in asked_groups(spec, load_capabilities())  # so the template's OpenVINO build is not left out
    result = compose(request, emt, spec=spec)
    assert "openvino" not in _packages(result.data) and "openvino-2025.3.0" in _packages(result.data)
    assert any("openvino already present (openvino-2025.3.0)" in c for c in result.changes)
    assert not unmet(result.data, {"has": ["openvino"]})


def test_software_its_group_says_a_family_does_not_package_is_not_added_and_said_once():
    ubuntu = _template("ubuntu26-x86_64-minimal-base-raw")
    result = compose("edge node running k3s on ubuntu", ubuntu)
    assert "k3s" not in _packages(result.data)
    said = [p for p in result.problems if p.startswith("k3s not added")]
    assert said and "not packaged in the Debian/Ubuntu archives" in said[0]
    missed = unmet(result.data, {"has": ["k3s"]})
    assert missed == ["package k3s missing"] and untold(missed, said) == []


def test_a_group_the_target_lacks_is_not_named_or_described_in_the_metadata():
    azl = _template("azl3-aarch64-edge-gateway-containers-raw")
    result = compose("aarch64 azure linux with docker and ros2", azl)  # Azure Linux packages no ROS 2
    metadata = result.data["metadata"]
    assert "ros2" not in result.data["image"]["name"]
    assert "ros" not in str([metadata["use_cases"], metadata["keywords"]]).lower()
    assert "ros 2" not in metadata["description"].lower()
    assert any("ros2" in p and "not available for azl3/aarch64" in p for p in result.problems)


# ---- prose after "for", versions that are part of a name, vendors' own repositories ---------------------
def test_what_follows_for_is_a_purpose_not_a_list_of_wishes():
    spec = parse_request("debian image with python 3 and flask and gunicorn for a small web app")
    assert "web" not in spec.unparsed and "app" not in spec.unparsed and "flask" in spec.unparsed
    assert not any("not pinned" in n for n in spec.notes)  # python 3 is python3, not a pin
    assert any("not pinned" in n for n in parse_request("debian with python 3.12").notes)


def test_software_from_a_vendors_own_repository_is_said_not_applied():
    spec = parse_request("ubuntu noble with tailscale installed")
    assert not spec.add_packages and not spec.unparsed
    assert any(n.startswith("tailscale not applied") and "pkgs.tailscale.com" in n for n in spec.notes)


@pytest.mark.parametrize(("request_text", "where"), [
    ("ubuntu server for a gitlab runner", "packages.gitlab.com"),
    ("debian 13 with gitlab-runner", "packages.gitlab.com"),
    ("ubuntu 24.04 build box with jenkins", "pkg.jenkins.io"),
    ("a self-hosted runner for github actions on debian", "github.com/actions/runner"),
])
def test_ci_runners_from_their_vendors_repositories_are_said_not_applied(request_text: str, where: str):
    spec = parse_request(request_text)
    assert any("not applied" in n and where in n for n in spec.notes), spec.notes
    assert not spec.unparsed, spec.unparsed


def test_one_unknown_word_after_install_is_a_package_and_after_add_only_when_shaped_like_one():
    assert "frr" in parse_request("debian 13, install frr").add_packages
    assert "lldpd" in parse_request("debian 13 and please install lldpd").add_packages
    assert "libfoo-dev" in parse_request("debian 13, add libfoo-dev").add_packages
    assert not {"logs", "separate"} & set(parse_request("debian 13, add logs").add_packages)


@pytest.mark.parametrize("words", ["a POS terminal", "a point-of-sale machine", "the point of sale system"])
def test_a_point_of_sale_machine_is_the_kiosk(words: str):
    assert "kiosk" in parse_request(f"debian 13 image for {words}").add_groups


@pytest.mark.parametrize(("text", "users"), [
    ("debian 13 box where user alice can sudo without a password and bob is a normal user",
     [{"action": "add", "name": "alice", "sudo": True, "nopasswd": True}, {"action": "add", "name": "bob"}]),
    ("ubuntu where carol may use sudo", [{"action": "add", "name": "carol", "sudo": True}]),
    ("dave should be a regular user", [{"action": "add", "name": "dave"}]),
])
def test_what_a_user_can_do_or_is_names_the_user(text, users):
    spec = parse_request(text)
    assert spec.users == users
    assert not spec.unparsed, spec.unparsed


@pytest.mark.parametrize("text", ["it can sudo", "the image is a normal user", "everyone can sudo"])
def test_what_names_no_one_adds_no_user(text):
    assert parse_request(text).users == []


def test_a_host_name_is_never_offered_as_a_package():
    from image_composer_mcp.server.composer.index_names import Reading, unchecked
    from image_composer_mcp.server.composer.request_spec import RequestSpec

    spec = RequestSpec(unparsed=["ntp.example.com", "pool.ntp.org", "frr"])
    unchecked(spec, {w: Reading(w, (w,)) for w in spec.unparsed}, "the index could not be read", frozenset({"routing"}))
    assert spec.unparsed[:2] == ["ntp.example.com", "pool.ntp.org"]
    assert spec.unparsed[2].startswith("frr (")


def test_english_words_joined_by_a_hyphen_are_not_offered_as_a_package():
    from image_composer_mcp.server.composer.index_names import Reading, unchecked
    from image_composer_mcp.server.composer.request_spec import RequestSpec

    spec = RequestSpec(unparsed=["well-known", "gitlab-runner"])
    unchecked(spec, {w: Reading(w, (w,)) for w in spec.unparsed}, "no index", frozenset({"well", "known"}))
    assert spec.unparsed[0] == "well-known" and spec.unparsed[1].startswith("gitlab-runner (")


@pytest.mark.parametrize(("text", "name"), [("the deploy account gets sudo", "deploy"), ("an ci user with sudo", "ci"),
                                            ("backup has sudo", "backup")])
def test_a_name_before_user_or_before_has_sudo_is_the_users(text, name):
    assert parse_request(text).users == [{"action": "add", "name": name, "sudo": True}]


@pytest.mark.parametrize("text", ["the user has sudo", "the new user has sudo", "a user can sudo"])
def test_a_verb_after_user_is_no_name(text):
    assert not [u for u in parse_request(text).users if u.get("name") in ("has", "can", "new")]


@pytest.mark.parametrize("text", ["drop the video group from operator", "remove operator from the video group"])
def test_a_user_leaves_a_group_and_nothing_else_changes(text):
    spec = parse_request(text)
    assert spec.users == [{"action": "add", "name": "operator", "existing_only": True, "leave_groups": ["video"]}]
    assert not spec.remove_packages and not spec.remove_groups and not spec.unparsed


def test_software_removed_from_the_image_is_no_user_leaving_a_group():
    spec = parse_request("remove docker from the image")
    assert not spec.users and "containers" in spec.remove_groups


def test_letting_a_user_use_sudo_gives_the_user_sudo_not_the_package():
    spec = parse_request("let operator use sudo")
    assert spec.users == [{"action": "add", "name": "operator", "sudo": True}] and "sudo" not in spec.add_packages


def test_leaving_a_group_edits_the_users_entry():
    data = {"image": {"name": "x", "version": "1"}, "target": {"os": "debian", "dist": "debian13", "arch": "x86_64",
                                                               "imageType": "raw"},
            "systemConfig": {"name": "x", "packages": ["openssh-server"],
                             "users": [{"name": "operator", "groups": ["video", "dialout"]}]}}
    result = apply_instruction(data, "drop the video group from operator")
    assert result.data["systemConfig"]["users"] == [{"name": "operator", "groups": ["dialout"]}]
    assert any("left group video" in c for c in result.changes), result.changes
    missing = apply_instruction(data, "remove bob from the video group")
    assert missing.data["systemConfig"]["users"] == data["systemConfig"]["users"]
