"""The HTTP transport's rules without a server: loopback detection, the remote-bind rule, the token sources."""

from __future__ import annotations

import logging

import pytest
from image_composer_mcp.server.core.config import ConfigError, ServerSettings, load_settings
from image_composer_mcp.server.transport.http import (
    check_bind,
    is_loopback,
    resolve_token,
)

TOKEN = "test-token-8f1d2c3b4a5e6f70"


# ---- helpers without a server ----------------------------------------------------------------------
def test_loopback_detection():
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "example.com"))


def test_remote_bind_needs_the_flag_and_warns_without_a_token(caplog):
    with pytest.raises(ConfigError, match="--allow-remote"):
        check_bind(ServerSettings(host="0.0.0.0"), TOKEN)
    with caplog.at_level(logging.WARNING, logger="image_composer_mcp.server.transport.http"):
        check_bind(ServerSettings(host="0.0.0.0", allow_remote=True), None)
    assert "WITHOUT authentication" in caplog.text
    caplog.clear()
    check_bind(ServerSettings(host="0.0.0.0", allow_remote=True), TOKEN)
    check_bind(ServerSettings(host="127.0.0.1"), None)
    assert "WITHOUT" not in caplog.text


def test_token_from_file_and_from_environment(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    assert resolve_token(load_settings(env={"OIC_AI_AUTH_TOKEN_FILE": str(token_file)}).server) == TOKEN
    assert resolve_token(load_settings(env={"OIC_AI_AUTH_TOKEN": TOKEN}).server) == TOKEN
    assert resolve_token(load_settings(env={}).server) is None
    with pytest.raises(ConfigError, match="cannot read"):
        resolve_token(load_settings(env={"OIC_AI_AUTH_TOKEN_FILE": str(tmp_path / "nope")}).server)
    with pytest.raises(ConfigError) as both:
        load_settings(env={"OIC_AI_AUTH_TOKEN": TOKEN, "OIC_AI_AUTH_TOKEN_FILE": str(token_file)})
    assert TOKEN not in str(both.value)
