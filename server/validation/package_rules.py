"""Rule family: packages and repositories. Packages built for the other architecture (boot chain, kernel
meta packages), names listed twice, repositories listed twice, unverified or malformed repositories.
"""

from __future__ import annotations

import re

from ..knowledge.template_format import load_template_format
from .context import PLACEHOLDER_TOKEN, Context, PathT, show


def check_packages(ctx: Context) -> None:
    arch = ctx.str_at("target", "arch")
    lists: list[tuple[PathT, list]] = [
        (("systemConfig", "packages"), ctx.list_at("systemConfig", "packages")),
        (("systemConfig", "kernel", "packages"), ctx.list_at("systemConfig", "kernel", "packages")),
    ]
    for base, items in lists:
        for i, name in enumerate(items):
            if isinstance(name, str) and arch:
                _check_package_arch(ctx, (*base, i), name, arch)
    kernel_base, kernel_pkgs = lists[1]
    system = {p for p in lists[0][1] if isinstance(p, str)}
    first: dict[str, int] = {}
    for i, name in enumerate(kernel_pkgs):
        if not isinstance(name, str):
            continue
        if name in first:
            ctx.warn(
                (*kernel_base, i),
                f"package '{name}' is listed twice in systemConfig.kernel.packages",
                "packages.duplicate",
                hint="Remove the repeated entry.",
            )
        elif name in system:
            ctx.warn(
                (*kernel_base, i),
                f"package '{name}' is listed in both systemConfig.packages and systemConfig.kernel.packages",
                "packages.duplicate",
                hint="Keep it in one list only.",
            )
        first.setdefault(name, i)
    for r, repo in enumerate(ctx.list_at("packageRepositories")):
        allowed = repo.get("allowPackages") if isinstance(repo, dict) else None
        seen: set[str] = set()
        for i, name in enumerate(allowed if isinstance(allowed, list) else []):
            if isinstance(name, str) and name in seen:
                ctx.warn(
                    ("packageRepositories", r, "allowPackages", i),
                    f"package '{name}' is listed twice in allowPackages",
                    "packages.duplicate",
                    hint="Remove the repeated entry.",
                )
            if isinstance(name, str):
                seen.add(name)


def _check_package_arch(ctx: Context, path: PathT, name: str, arch: str) -> None:
    fmt = load_template_format()
    built_for = None
    if arch != "x86_64" and fmt.arch_only["x86_64"].search(name):
        built_for = "x86_64"
    elif arch != "aarch64" and fmt.arch_only["aarch64"].search(name):
        built_for = "aarch64"
    if built_for is None:
        return
    hint = "Remove it or use the package for the target architecture."
    if name.lower().startswith(("grub-pc", "grub2-pc")):
        hint = "BIOS GRUB exists for x86 only; on aarch64 use grub-efi-arm64 (deb) or grub2-efi-aa64 (rpm)."
    else:
        for x86, arm in fmt.arch_name_swaps():
            old, new = (x86, arm) if built_for == "x86_64" else (arm, x86)
            if old in name and arch in ("x86_64", "aarch64"):
                hint = f"Use '{name.replace(old, new)}' for {arch}."
                break
    ctx.add(
        path,
        f"package '{name}' is built for {built_for}, but target.arch is {arch}",
        "packages.wrong_arch",
        hint=hint,
    )


def check_repositories(ctx: Context) -> None:
    # Codenames repeat legitimately (deb suites such as jammy from several URLs), so only a
    # repository listed twice with the same codename, url/path and component is flagged.
    seen: dict[tuple[str, ...], int] = {}
    for i, repo in enumerate(ctx.list_at("packageRepositories")):
        if not isinstance(repo, dict):
            continue
        base: PathT = ("packageRepositories", i)
        name = repo.get("codename")
        ident = tuple(str(repo.get(k, "")) for k in ("codename", "url", "path", "component"))
        if ident in seen:
            ctx.warn(
                base,
                f"repository '{name}' is listed twice (same as packageRepositories[{seen[ident]}])",
                "repo.duplicate",
                hint="Remove the repeated entry.",
            )
        seen.setdefault(ident, i)
        if repo.get("pkey") == "[trusted=yes]":
            ctx.warn(
                (*base, "pkey"),
                f"repository '{name}' skips GPG verification ([trusted=yes])",
                "repo.untrusted",
                hint="Prefer the repository's signing key URL.",
            )
        url = repo.get("url")
        if (
            isinstance(url, str)
            and url
            and not PLACEHOLDER_TOKEN.search(url)
            and not re.match(r"^(https?|file|ftp)://\S+$", url)
        ):
            ctx.warn(
                (*base, "url"),
                f"repository url {show(url)} is not an http(s):// or file:// URL",
                "repo.url",
                hint="Give the repository base URL, e.g. https://example.com/repo/.",
            )


__all__ = ["check_packages", "check_repositories"]
