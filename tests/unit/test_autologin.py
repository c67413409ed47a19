"""Automatic login's files (resources/autologin.yaml): the command written runs in a shell and leaves the text."""

from __future__ import annotations

import subprocess

import pytest
from image_composer_mcp.server.knowledge.autologin import load_autologin

_LOGINS = load_autologin()


@pytest.mark.parametrize("manager", [*_LOGINS.display_managers, "getty"])
def test_each_login_files_command_writes_its_text_for_the_user(manager, tmp_path):
    login = _LOGINS.getty if manager == "getty" else _LOGINS.display_managers[manager]
    command = login.command("guest").replace(" /etc/", f" {tmp_path}/etc/")
    subprocess.run(["sh", "-c", command], check=True)
    written = (tmp_path / login.path.lstrip("/")).read_text()
    assert written == login.text.format(user="guest") and "guest" in written


def test_the_display_manager_installed_is_used_and_the_getty_without_one():
    assert _LOGINS.file_for({"lightdm", "xfce4"})[0] == "lightdm"
    assert _LOGINS.file_for({"openssh-server"})[0] == "getty"
