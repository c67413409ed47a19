"""Rule family: text and system configuration. Upstream's string limits (length, printable characters),
placeholders left in, users (duplicates, plain-text passwords, broken hashes), additional files and
configuration commands, the system name and hostname.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .context import PLACEHOLDER_TOKEN, PLACEHOLDER_WHOLE, Context, PathT, closest, show, where

MAX_STRING_RUNES = 4096  # upstream security.DefaultLimits().MaxString


def _walk_strings(obj: Any, path: PathT = (), depth: int = 0) -> Iterator[tuple[PathT, str]]:
    if depth > 100:
        return
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_strings(v, (*path, k), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk_strings(v, (*path, i), depth + 1)


_SURROGATE = re.compile("[\ud800-\udfff]")


_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def _string_problem(text: str) -> tuple[str, str, str] | None:
    """(code, message, hint) when upstream's security.ValidateString refuses ``text``, else None.

    Same order as upstream: UTF-8, NUL, length in runes, then every rune must satisfy Go's
    unicode.IsPrint (letters, marks, numbers, punctuation, symbols, ASCII space) or be \\n or \\t.
    """
    if not text:
        return None
    ascii_only = text.isascii()
    surrogate = None if ascii_only else _SURROGATE.search(text)
    if surrogate:
        return ("string.encoding", f"is not valid UTF-8 (a lone surrogate at character {surrogate.start() + 1})",
                "Re-encode the text as UTF-8.")
    if "\0" in text:
        return ("string.nul", f"contains a NUL character at character {text.index(chr(0)) + 1}",
                "Remove the NUL (\\0) character.")
    if len(text) > MAX_STRING_RUNES:
        return ("string.too_long",
                f"is {len(text):,} characters long; os-image-composer accepts at most {MAX_STRING_RUNES:,}",
                "Shorten it; a long shell sequence belongs in a script added with additionalFiles "
                "and run by one configurations entry.")
    chars: Iterable[tuple[int, str]]
    if ascii_only:  # the common case, without a per-character category lookup
        bad = _ASCII_CONTROL.search(text)
        chars = [(bad.start(), bad.group())] if bad else []
    else:
        chars = enumerate(text)
    for i, ch in chars:
        if ch in "\n\t" or ch == " " or unicodedata.category(ch)[0] in "LMNPS":
            continue
        name = unicodedata.name(ch, "a control character")
        return ("string.control",
                f"contains U+{ord(ch):04X} ({name}) at character {i + 1}; os-image-composer accepts only "
                "printable characters, newline and tab",
                "Remove it, or replace it with a plain space if it is a special space.")
    return None


def check_strings(ctx: Context) -> None:
    for path, text in _walk_strings(ctx.data):
        problem = _string_problem(text)
        if problem:
            code, message, hint = problem
            ctx.add(path, f"{where(path)} {message}", code, hint=hint)


_PLACEHOLDER_HINTS = {
    "url": "Replace it with the repository base URL (https://...).",
    "pkey": 'Replace it with the GPG key URL, an absolute key path, or "[trusted=yes]".',
    "pkeys": "Replace it with the GPG key URL or an absolute key path.",
    "groups": "Replace it with a real group such as sudo or wheel, or remove it.",
    "password": "Replace it with a pre-hashed password (starting with '$').",
}


def check_placeholders(ctx: Context) -> None:
    for path, text in _walk_strings(ctx.data):
        token = None
        m = PLACEHOLDER_TOKEN.search(text)
        if m:
            token = m.group(0)
        elif PLACEHOLDER_WHOLE.match(text):
            token = text.strip()
        if token is None:
            continue
        key = next((p for p in reversed(path) if isinstance(p, str)), "")
        ctx.warn(
            path,
            f"{where(path)} still holds the placeholder {token}",
            "placeholder",
            hint=_PLACEHOLDER_HINTS.get(
                key, "Replace the placeholder with a real value or remove the entry."
            ),
        )


_CRYPT_RE = re.compile(r"^\$[0-9a-z]+\$")


def check_users(ctx: Context) -> None:
    names: dict[str, int] = {}
    for i, user in enumerate(ctx.list_at("systemConfig", "users")):
        if not isinstance(user, dict):
            continue
        base: PathT = ("systemConfig", "users", i)
        name = user.get("name")
        label = f"'{name}'" if isinstance(name, str) else f"#{i}"
        if isinstance(name, str):
            if name in names:
                ctx.warn(
                    (*base, "name"),
                    f"user '{name}' is defined twice (also users[{names[name]}]); the later entry wins",
                    "users.duplicate",
                    hint="Merge the two entries.",
                )
            names.setdefault(name, i)
        pw = user.get("password")
        if not isinstance(pw, str) or not pw or PLACEHOLDER_TOKEN.search(pw) or PLACEHOLDER_WHOLE.match(pw):
            continue
        if pw.startswith("$"):
            if not _CRYPT_RE.match(pw):
                ctx.warn(
                    (*base, "password"),
                    f"user {label}'s password starts with '$', so it is taken as already "
                    "hashed, but it is not a crypt(3) hash; nobody could log in with it",
                    "users.bad_hash",
                    hint="Use a hash such as the output of `openssl passwd -6`, which looks like $6$salt$....",
                )
            continue
        extra = (
            " (hash_algo only hashes it during the build; the clear text stays in the template)"
            if user.get("hash_algo")
            else ""
        )
        ctx.warn(
            (*base, "password"),
            f"user {label} has a plain-text password{extra}",
            "users.plaintext_password",
            hint="Store a pre-hashed password instead, e.g. the output of `openssl passwd -6` "
            "(starts with $6$); upstream treats values starting with '$' as already hashed.",
        )


def check_files_and_commands(ctx: Context) -> None:
    for i, entry in enumerate(ctx.list_at("systemConfig", "additionalFiles")):
        if not isinstance(entry, dict):
            continue
        base: PathT = ("systemConfig", "additionalFiles", i)
        for key in entry:
            if key not in ("local", "final"):
                guess = closest(key, ("local", "final"))
                ctx.warn(
                    (*base, key),
                    f"unknown key '{key}' in an additionalFiles entry; upstream ignores it",
                    "additional_files.unknown_key",
                    at_key=True,
                    hint=(f"Did you mean '{guess}'? " if guess else "") + "Entries have 'local' and 'final'.",
                )
        local, final = entry.get("local"), entry.get("final")
        if not (isinstance(local, str) and local and isinstance(final, str) and final):
            ctx.warn(
                base,
                "additionalFiles entry needs both 'local' (file next to the template) and 'final' "
                "(path in the image); upstream skips it otherwise",
                "additional_files.incomplete",
            )
            continue
        if not final.startswith("/"):
            ctx.warn(
                (*base, "final"),
                f"final path '{final}' is not absolute",
                "additional_files.final_relative",
                hint="Give the absolute path inside the image, e.g. /etc/hostname.",
            )
        if (
            ctx.base_dir is not None
            and not Path(local).is_absolute()
            and not PLACEHOLDER_TOKEN.search(local)
            and not (Path(ctx.base_dir) / local).exists()
        ):
            ctx.warn(
                (*base, "local"),
                f"additional file '{local}' does not exist next to the template",
                "additional_files.missing",
                hint="Upstream also looks relative to the distro's default config directory "
                "(osv/<os>/<dist>/imageconfigs/defaultconfigs/), where ../additionalfiles/ ships; "
                "otherwise the entry is skipped during the build.",
            )
    for i, entry in enumerate(ctx.list_at("systemConfig", "configurations")):
        if not isinstance(entry, dict):
            continue
        base = ("systemConfig", "configurations", i)
        for key in entry:
            if key != "cmd":
                ctx.warn(
                    (*base, key),
                    f"unknown key '{key}' in a configurations entry; upstream reads only 'cmd'",
                    "configurations.unknown_key",
                    at_key=True,
                    hint="Did you mean 'cmd'?" if closest(key, ("cmd",)) else 'Each entry is {cmd: "..."}.',
                )
        if not isinstance(entry.get("cmd"), str) or not entry.get("cmd", "").strip():
            ctx.warn(
                base,
                "configurations entry has no command",
                "configurations.no_cmd",
                hint='Write it as - cmd: "your shell command".',
            )


_HOSTNAME_RE = re.compile(
    r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def is_hostname(text: str) -> bool:
    """An RFC 1123 host name: dot-separated labels of letters, digits and inner '-', 63 each, 253 in all."""
    return bool(_HOSTNAME_RE.fullmatch(text))


def check_system(ctx: Context) -> None:
    system = ctx.get("systemConfig")
    if isinstance(system, dict) and system and not system.get("name"):
        ctx.warn(
            ("systemConfig",),
            "systemConfig has no name; os-image-composer then ignores the whole "
            "systemConfig and uses the distro defaults",
            "system.name_missing",
            at_key=True,
            hint="Add name: e.g. my-image (any non-empty text).",
        )
    hostname = ctx.get("systemConfig", "hostname")
    if isinstance(hostname, str) and hostname and not is_hostname(hostname):
        ctx.warn(
            ("systemConfig", "hostname"),
            f"hostname {show(hostname)} is not a valid host name",
            "system.hostname",
            hint="Use letters, digits and '-', up to 63 characters per dot-separated label.",
        )


__all__ = ["MAX_STRING_RUNES", "check_files_and_commands", "check_placeholders", "check_strings", "check_system",
           "check_users"]
