"""verify_packages: do these packages exist for the target distribution and architecture?"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from server.engine import Engine
from tools._common import MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_YAML_CHARS, call_engine, result


class SourceInfo(BaseModel):
    source: str
    ok: bool
    packages: int
    age_seconds: float | None = Field(description="age of the index copy used")
    error: str | None
    from_cache: bool


class VerifyPackagesResult(BaseModel):
    verified: bool = Field(description="every repository index could be consulted, so missing means missing")
    all_found: bool
    dist: str | None
    arch: str | None
    found: list[str]
    missing: list[str]
    unchecked: list[str] = Field(description="not found in the indexes that could be read; unknown")
    suggestions: dict[str, list[str]] = Field(description="for each missing package, names that do exist")
    sources: list[SourceInfo]
    notes: dict[str, str]
    message: str


def to_model(r) -> VerifyPackagesResult:  # noqa: ANN001 - server.packages.VerifyResult
    d = r.to_dict()
    return VerifyPackagesResult(
        verified=bool(d.get("complete", d["verified"])), all_found=bool(d["verified"]), dist=d["dist"],
        arch=d["arch"], found=d["found"], missing=d["missing"], unchecked=d["unchecked"],
        suggestions=d["suggestions"], sources=d["sources"], notes=d.get("notes") or {}, message=d["message"])


def to_text(r: VerifyPackagesResult) -> str:
    lines = [r.message]
    if r.missing:
        for name in r.missing:
            alt = r.suggestions.get(name)
            lines.append(f"- missing: {name}" + (f" (try: {', '.join(alt)})" if alt else ""))
    if r.unchecked:
        lines.append(f"- unchecked (repository unavailable): {', '.join(r.unchecked)}")
    if r.found:
        lines.append(f"- found {len(r.found)}: {', '.join(r.found[:40])}" + (" ..." if len(r.found) > 40 else ""))
    for s in r.sources:
        state = "ok" if s.ok else f"failed: {s.error}"
        lines.append(f"  source {s.source}: {state}")
    return "\n".join(lines)


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.tool(
        name="verify_packages",
        title="Verify packages exist",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=True),
    )
    async def verify_packages(
        packages: Annotated[list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] | None, Field(max_length=MAX_LIST_ITEMS, description="package names; globs like 'wayland*' allowed")] = None,
        yaml: Annotated[str | None, Field(max_length=MAX_YAML_CHARS, description="or a template: its target and packages are used")] = None,
        name: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="or the name of an indexed template")] = None,
        os: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="target OS, e.g. ubuntu, azure-linux")] = None,
        dist: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="target distribution, e.g. ubuntu24, azl3, elxr12")] = None,
        arch: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="x86_64 or aarch64")] = None,
    ) -> Annotated[CallToolResult, VerifyPackagesResult]:
        """Check that packages exist in the real repositories of the target distribution and architecture
        (Debian Packages / RPM primary.xml indexes, cached). Missing packages get suggestions (close spellings,
        virtual packages, cross-distro names). When a repository cannot be reached, verified is false and the
        names are reported as unchecked, never as missing."""
        res = await call_engine(engine, "verify_packages", engine.verify_packages, packages, yaml, name, os, dist,
                                arch)
        model = to_model(res)
        return result(model, to_text(model))
