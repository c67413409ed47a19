"""The redaction helpers that keep secrets out of logs and error text (server/core/logs.py)."""

from __future__ import annotations

from image_composer_mcp.server.core.logs import redact, remember_secret, strip_userinfo


def test_redaction_helpers() -> None:
    remember_secret("literal-secret-value-42")
    out = redact('{"echo": "literal-secret-value-42", "auth": "Bearer abcdefghijkl", "api_key": "zzz"}')
    assert "literal-secret-value-42" not in out and "abcdefghijkl" not in out and '"zzz"' not in out
    assert strip_userinfo("https://user:pw@example.com:8443/v1?x=1") == "https://example.com:8443/v1?x=1"
    assert strip_userinfo("cannot reach http://tok@h/v1 (refused)") == "cannot reach http://h/v1 (refused)"
    remember_secret("short")  # too short to remove safely everywhere: ordinary words would be blanked
    assert redact("a short note") == "a short note"
