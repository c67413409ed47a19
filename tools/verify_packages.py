"""verify_packages: do these packages exist for the target distribution and architecture?"""

from __future__ import annotations

import re
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..server.engine import Engine
from ._common import MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_YAML_CHARS, call_engine, result


class SourceInfo(BaseModel):
    source: str
    ok: bool
    packages: int
    age_seconds: float | None = Field(description="age of the index copy used")
    error: str | None
    from_cache: bool


class ClosurePackageInfo(BaseModel):
    name: str
    version: str
    installed_bytes: int
    chain: list[str] = Field(description="requested package -> ... -> this package")


class ClosureProblem(BaseModel):
    kind: str = Field(description="missing_package | unresolvable | conflict | virtual_package | disk_too_small | "
                                  "disk_tight | not_checked | ...")
    severity: str
    message: str
    path: str = Field(description="where in the template, when a template was given")
    chain: list[str] = Field(default_factory=list)
    hint: str | None = None


class ClosureReport(BaseModel):
    checked: bool = Field(description="the solver ran")
    complete: bool = Field(description="every repository index was read")
    ok: bool = Field(description="checked, and no missing package, unresolvable dependency, conflict or disk error")
    solver: str
    package_count: int
    installed_bytes: int
    installed: str = Field(description="installed size, human readable")
    largest: list[ClosurePackageInfo] = Field(description="the 25 largest packages of the closure, with chains")
    package_names: list[str]
    virtual: dict[str, list[str]] = Field(description="requested virtual names -> real packages providing them")
    excluded: list[str] = Field(description="requested packages left out of the measured closure (broken)")
    problems: list[ClosureProblem]
    disk: str | None = Field(description="disk-fit verdict with numbers, when a template was given")
    min_disk_bytes: int | None = None
    timings: dict[str, float]
    message: str


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
    closure: ClosureReport | None = Field(None, description="install closure, conflicts and disk fit "
                                                             "(closure=true)")


def closure_model(res, build=None) -> ClosureReport:  # noqa: ANN001 - ClosureResult, BuildCheck | None
    """ClosureResult (+ BuildCheck when a template was checked) -> the tool's model."""
    problems: list[ClosureProblem] = []
    chains: dict[str, list[str]] = {}
    for u in res.unresolvable:
        chains[u.message] = u.chain
    for c in res.conflicts:
        chains[c.message] = c.chain + ["<conflicts with>"] + c.other_chain
    if build is not None:
        for issue in [*build.errors, *build.warnings]:
            problems.append(ClosureProblem(kind=issue.code.removeprefix("build."), severity=issue.severity,
                                           message=issue.message, path=issue.path, hint=issue.hint,
                                           chain=chains.get(issue.message, [])))
    else:
        for name in res.missing:
            sugg = res.suggestions.get(name)
            problems.append(ClosureProblem(kind="missing_package", severity="error", path="",
                                           message=f"package {name} is in no configured repository",
                                           hint=f"Try: {', '.join(sugg)}." if sugg else None))
        for name, prov in res.virtual.items():
            problems.append(ClosureProblem(kind="virtual_package", severity="warning", path="",
                                           message=f"{name} is virtual; provided by {', '.join(prov[:8])}",
                                           hint=f"Name the one you want, e.g. {prov[0]}."))
        for u in res.unresolvable:
            problems.append(ClosureProblem(kind="unresolvable", severity="error" if res.complete else "warning",
                                           path="", message=u.message, chain=u.chain))
        for c in res.conflicts:
            problems.append(ClosureProblem(kind="conflict", severity="error", path="", message=c.message,
                                           chain=chains[c.message]))
        if not res.checked:
            problems.append(ClosureProblem(kind="not_checked", severity="warning", path="", message=res.message))
    largest = sorted(res.packages, key=lambda p: -p.installed_bytes)[:25]
    gib = res.installed_bytes / 1024**3
    disk = build.disk if build is not None else None
    return ClosureReport(
        checked=res.checked, complete=res.complete, ok=res.ok and (build is None or build.ok), solver=res.solver,
        package_count=len(res.packages), installed_bytes=res.installed_bytes,
        installed=f"{gib:.2f} GiB" if gib >= 1 else f"{res.installed_bytes / 1024**2:.0f} MiB",
        largest=[ClosurePackageInfo(name=p.name, version=p.version, installed_bytes=p.installed_bytes,
                                    chain=p.chain) for p in largest],
        package_names=[p.name for p in res.packages], virtual=res.virtual, excluded=res.excluded,
        problems=problems, disk=disk.message if disk else None,
        min_disk_bytes=disk.min_disk_bytes if disk else None, timings=res.timings, message=res.message)


def closure_text(c: ClosureReport) -> str:
    lines = [f"Closure: {c.message}"]
    if c.disk:
        lines.append(f"Disk: {c.disk}")
    for p in c.problems:
        chain = f" [chain: {' -> '.join(p.chain)}]" if p.chain else ""
        lines.append(f"- {p.severity} {p.kind}: {p.message}{chain}" + (f" (hint: {p.hint})" if p.hint else ""))
    if c.largest:
        lines.append("Largest: " + ", ".join(f"{p.name} ({p.installed_bytes / 1024**2:.0f} MiB, via "
                                             f"{' -> '.join(p.chain)})" for p in c.largest[:5]))
    return "\n".join(lines)


def to_model(r) -> VerifyPackagesResult:  # noqa: ANN001 - server.packages.VerifyResult
    d = r.to_dict()
    return VerifyPackagesResult(
        verified=bool(d.get("complete", d["verified"])), all_found=bool(d["verified"]), dist=d["dist"],
        arch=d["arch"], found=d["found"], missing=d["missing"], unchecked=d["unchecked"],
        suggestions=d["suggestions"], sources=d["sources"], notes=d.get("notes") or {}, message=d["message"], closure=None)


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
    # Sources that failed for the same reason are said once, with how many ("offline and not cached": 12 of them)
    failed: dict[str, list[str]] = {}
    for s in r.sources:
        if s.ok:
            lines.append(f"  source {s.source}: ok")
        else:
            reason = re.sub(r" \(not retried for [^)]*\)$", "", str(s.error))
            failed.setdefault(reason, []).append(s.source)
    for reason, sources in failed.items():
        where = sources[0] if len(sources) == 1 else f"{len(sources)} sources ({sources[0]}, ...)"
        lines.append(f"  {where}: failed: {reason}")
    if r.closure is not None:
        lines.append(closure_text(r.closure))
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
        closure: Annotated[bool, Field(description="also solve the install closure: every package with the "
                                                   "chain that pulls it in, unresolvable dependencies, "
                                                   "conflicts, installed size and (for a template) whether it "
                                                   "fits the root partition")] = False,
    ) -> Annotated[CallToolResult, VerifyPackagesResult]:
        """Check that packages exist in the real repositories of the target distribution and architecture
        (Debian Packages / RPM primary.xml indexes, cached). Missing packages get suggestions (close spellings,
        virtual packages, cross-distro names). When a repository cannot be reached, verified is false and the
        names are reported as unchecked, never as missing. closure=true runs the dependency solver (libsolv)
        over the same indexes: will it build, and will it fit?"""
        res = await call_engine(engine, "verify_packages", engine.verify_packages, packages, yaml, name, os, dist,
                                arch)
        model = to_model(res)
        if closure:
            if yaml is not None or name is not None:
                build = await call_engine(engine, "verify_packages", engine.check_build, yaml, name)
                model.closure = closure_model(build.closure, build)
            else:
                cres = await call_engine(engine, "verify_packages", engine.check_closure, packages or [],
                                         os=os or None, dist=res.dist or dist, arch=res.arch or arch)
                model.closure = closure_model(cres)
        return result(model, to_text(model))
