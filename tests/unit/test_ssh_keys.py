"""SSH public keys given for users (server/composer/parse_keys.py, system_edits.py ssh_keys) and the root account
locked by a setting (resources/system_settings.yaml `root account`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from image_composer_mcp.server.composer.compose import apply_instruction, compose
from image_composer_mcp.server.composer.request_parser import parse_request
from image_composer_mcp.server.knowledge.system_settings import sshd_configuration

LIBRARY = Path(__file__).resolve().parents[2] / "image-templates"
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5"
RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ=="


def _template(name: str) -> dict:
    return yaml.safe_load((LIBRARY / f"{name}.yml").read_text(encoding="utf-8"))


def _commands(data: dict) -> list[str]:
    return [str(c.get("cmd")) for c in data["systemConfig"].get("configurations") or []]


@pytest.mark.parametrize(("text", "user", "key"), [
    (f"debian 13 with user bob with sudo and ssh key {RSA} bob@host", "bob", f"{RSA} bob@host"),
    (f"only user admin can log in with ssh key {ED25519} admin@laptop", "admin", f"{ED25519} admin@laptop"),
    (f"add my key {ED25519} to deploy", "deploy", ED25519),
    (f"debian, user ops, ssh key: {ED25519} ops@box, hostname web1", "ops", f"{ED25519} ops@box"),
    (f"ssh public key for root: {ED25519}", "root", ED25519),
])
def test_a_key_is_read_whole_with_the_user_it_is_for_and_nothing_is_left_unread(text, user, key):
    spec = parse_request(text)
    assert spec.ssh_keys == [{"user": user, "key": key}]
    assert not spec.unparsed and not spec.kernel_cmdline_append, (spec.unparsed, spec.kernel_cmdline_append)


def test_a_users_key_is_written_for_sshd_to_read_and_the_user_is_created_for_it():
    result = compose(f"azure linux where only user admin can log in with ssh key {ED25519} admin@laptop",
                     _template("azl3-x86_64-minimal-base-raw"))
    assert {"name": "admin"} in result.data["systemConfig"]["users"]
    commands = _commands(result.data)
    assert any(f"echo '{ED25519} admin@laptop' >> /etc/ssh/authorized_keys/admin" in c for c in commands)
    drop_in = next(c for c in commands if "20-authorized-keys.conf" in c)
    assert "authorized_keys/%%u" in drop_in  # printf's format would print %u as a number


def test_sshd_drop_in_lines_reach_the_file_as_written():
    entry = sshd_configuration(("AuthorizedKeysFile .ssh/authorized_keys /etc/ssh/authorized_keys/%u",), "k", "k")
    printf = entry["cmd"].split(" && ")[1].split(" > ")[0]
    out = subprocess.run(["sh", "-c", printf], capture_output=True, text=True, check=True).stdout
    assert out == "AuthorizedKeysFile .ssh/authorized_keys /etc/ssh/authorized_keys/%u\n"


def test_a_key_with_no_user_said_goes_to_the_only_user_or_is_reported():
    one = compose("debian 13 with user ops", _template("debian13-x86_64-minimal-base-raw")).data
    edited = apply_instruction(one, f"add the public key {ED25519}")
    assert any("/etc/ssh/authorized_keys/ops" in c for c in _commands(edited.data))
    bare = apply_instruction(_template("debian13-x86_64-minimal-base-raw"), f"add the public key {ED25519}")
    assert not any("authorized_keys" in c for c in _commands(bare.data) if c)
    assert any("say which user" in u for u in bare.unhandled)


def test_a_sudo_user_with_only_a_key_is_told_sudo_will_ask_for_a_password():
    result = compose(f"debian 13 with user bob with sudo and ssh key {RSA}", _template("debian13-x86_64-minimal-base-raw"))
    assert any("sudo will ask" in c for c in result.changes)
    quiet = compose(f"debian 13 with user bob with passwordless sudo and ssh key {RSA}",
                    _template("debian13-x86_64-minimal-base-raw"))
    assert not any("sudo will ask" in c for c in quiet.changes)


def test_the_root_account_locked_in_words():
    for text in ("lock the root account", "the root user is disabled", "no root user"):
        spec = parse_request(text)
        assert [c["cmd"] for c in spec.configurations] == ["passwd -l root"], text
        assert not spec.unparsed, (text, spec.unparsed)


@pytest.mark.parametrize("text", ["ubuntu 24.04, lock root and add an admin user ops", "root should stay locked",
                                  "root is locked", "locking root"])
def test_root_alone_with_a_verb_of_locking_is_the_root_account_locked(text):
    spec = parse_request(text)
    assert [c["cmd"] for c in spec.configurations] == ["passwd -l root"] and not spec.unparsed


@pytest.mark.parametrize("text", ["lock down root login", "root gets 10 gigs", "give alice root"])
def test_root_without_locking_or_locked_as_something_else_is_no_account_locked(text):
    assert "passwd -l root" not in [c["cmd"] for c in parse_request(text).configurations]


def test_a_user_removed_takes_its_key_and_sshd_block_along_and_says_nothing_of_what_it_lacked():
    base = _template("debian13-x86_64-minimal-base-raw")
    keyed = apply_instruction(base, f"add a user bob with sudo and the ssh key {RSA}").data
    keyed = apply_instruction(keyed, "bob cannot log in with a password").data
    assert any("Match User bob" in str(c.get("cmd")) for c in keyed["systemConfig"]["configurations"])
    no_sudo = apply_instruction(keyed, "bob shouldn't have sudo after all")
    assert not any("nothing to take out" in c for c in no_sudo.changes)
    gone = apply_instruction(no_sudo.data, "remove user bob")
    commands = " ".join(str(c.get("cmd")) for c in gone.data["systemConfig"].get("configurations") or [])
    assert "/etc/ssh/authorized_keys/bob" not in commands and "Match User bob" not in commands
    assert any(c.startswith("took out ssh key for bob") for c in gone.changes)
    assert not any("nothing to take out" in c for c in gone.changes)


@pytest.mark.parametrize("text", ["bob cannot log in with a password", "no password login for bob",
                                  "password login off for bob", "the user bob shouldn't log in over ssh with a password"])
def test_password_login_said_off_for_a_named_user_is_off_for_that_user_alone(text):
    spec = parse_request(text)
    assert [c["label"] for c in spec.configurations] == ["password login off for bob"]
    assert "Match User bob" in spec.configurations[0]["cmd"] and not spec.unparsed
    assert spec.users == [{"action": "add", "name": "bob", "existing_only": True}]  # never created by this


def test_password_login_said_off_for_no_one_in_particular_is_still_everyones():
    spec = parse_request("no password login over ssh")
    assert not any("Match User" in c["cmd"] for c in spec.configurations) and spec.configurations
