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


def test_key_pattern_needs_a_word_start() -> None:
    """A template named debian13-x86_64-kiosk-raw is not an API key: the answer must keep its name."""
    text = "started from debian13-x86_64-kiosk-raw; a data-disk-partition; key sk-proj-abcdefgh1234 and (sk-abcdefghijk)"
    out = redact(text)
    assert "debian13-x86_64-kiosk-raw" in out and "data-disk-partition" in out
    assert "sk-proj-abcdefgh1234" not in out and "sk-abcdefghijk" not in out
