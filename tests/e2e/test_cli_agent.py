"""`generate` and `chat` through real subprocesses (offline provider)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from image_composer_mcp.server.core.yamlsafe import load_mapping

from tests.conftest import REPO


def _run(args: list[str], cache: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OIC_AI_CACHE_DIR=str(cache), OIC_AI_PROVIDER="offline", OIC_AI_PACKAGES_OFFLINE="true")
    return subprocess.run([sys.executable, "-m", "image_composer_mcp", *args], cwd=str(REPO), env=env, input=stdin,
                          capture_output=True, text=True, timeout=180)


def test_generate_json_and_output_file(library_cache, tmp_path):
    out = _run(["generate", "ubuntu 24.04 edge gateway with docker for arm64", "--json"], library_cache)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["valid"] and data["provider"] == "offline"
    assert load_mapping(data["yaml"]).data["target"]["arch"] == "aarch64"
    target = tmp_path / "gw.yml"
    out = _run(["generate", "debian 13 kvm host", "--output", str(target)], library_cache)
    assert out.returncode == 0, out.stderr
    assert load_mapping(target.read_text()).data["target"]["dist"] == "debian13"
    assert out.stdout == "" and "wrote" in out.stderr


def test_generate_piped_prints_yaml_only_on_stdout(library_cache):
    out = _run(["generate", "azure linux minimal image"], library_cache)
    assert out.returncode == 0
    assert load_mapping(out.stdout).data["target"]["dist"] == "azl3"
    assert "Generated" in out.stderr


def test_generate_bad_request(library_cache):
    out = _run(["generate", "   "], library_cache)
    assert out.returncode == 2 and "request is empty" in out.stderr


def test_chat_loop_and_continue(library_cache, tmp_path):
    cache = tmp_path / "cache"
    import shutil

    shutil.copytree(library_cache, cache)
    saved = tmp_path / "final.yml"
    out = _run(["chat"], cache, stdin=f"minimal ubuntu 24.04 image\nadd vim\nwhat packages are included?\n"
                                      f"/save {saved}\n/quit\n")
    assert out.returncode == 0, out.stderr
    assert "revision 1" in out.stdout and "revision 2" in out.stdout and "+    - vim" in out.stdout
    assert "vim" in load_mapping(saved.read_text()).data["systemConfig"]["packages"]
    again = _run(["chat", "--continue"], cache, stdin="/history\nundo\n")
    assert again.returncode == 0, again.stderr
    assert "continuing conversation" in again.stdout and "2: refined: add vim" in again.stdout
    assert "Reverted to revision 1" in again.stdout
