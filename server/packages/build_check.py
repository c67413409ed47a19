"""Will it build? The closure check and the disk-fit check as validation issues.

One entry point for validate_template (``check_build=true``), verify_packages (``closure=true``) and
the agent loop (``build_check_step``): ``check_build(verifier, text_or_data)``. Everything here needs
repository indexes, so it is opt-in; when they cannot be read the result says so as a warning
(``build.not_checked``) and nothing is claimed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.yamlsafe import ParsedYaml, YamlError, load_mapping
from ..validation.report import Issue
from .closure import ClosureResult, checker_for
from .disk_fit import DiskFit, check_disk_fit
from .verifier import PackageVerifier

PathT = tuple[str | int, ...]


@dataclass
class BuildCheck:
    closure: ClosureResult
    disk: DiskFit | None
    errors: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        closure = self.closure.to_dict()
        # Every package with its chain is bulky; callers that want it read ``closure.packages``.
        return {
            "ok": self.ok,
            "closure": closure,
            "disk": self.disk.to_dict() if self.disk else None,
            "errors": [i.to_dict() for i in self.errors],
            "warnings": [i.to_dict() for i in self.warnings],
        }

    def summary(self) -> str:
        lines = [self.closure.message]
        if self.disk is not None:
            lines.append(self.disk.message)
        lines += [f"error: {i}" for i in self.errors]
        lines += [f"warning: {i}" for i in self.warnings]
        return "\n".join(lines)


def _package_path(data: dict[str, Any], name: str) -> PathT:
    sc = found if isinstance(found := data.get("systemConfig"), dict) else {}
    pkgs = found if isinstance(found := sc.get("packages"), list) else []
    if name in pkgs:
        return ("systemConfig", "packages", pkgs.index(name))
    kernel = found if isinstance(found := sc.get("kernel"), dict) else {}
    kp = found if isinstance(found := kernel.get("packages"), list) else []
    if name in kp:
        return ("systemConfig", "kernel", "packages", kp.index(name))
    return ("systemConfig", "packages")


def _fmt(path: PathT) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _parse_path(text: str) -> PathT:
    """``$.disk.partitions[1].end`` -> ("disk", "partitions", 1, "end")."""
    out: list[str | int] = []
    for part in text.lstrip("$").replace("]", "").replace("[", ".").split("."):
        if part:
            out.append(int(part) if part.isdigit() else part)
    return tuple(out)


def check_build(verifier: PackageVerifier, template: str | dict[str, Any]) -> BuildCheck:
    """Closure + conflicts + disk fit for a template (YAML text or parsed mapping)."""
    parsed: ParsedYaml | None = None
    if isinstance(template, str):
        try:
            parsed = load_mapping(template)
        except YamlError as e:
            raise ValueError(f"the template is not valid YAML: {e}") from None
        data = parsed.data
    else:
        data = template
    closure = checker_for(verifier).check_template(data)
    out = BuildCheck(closure, None)

    def add(path: PathT, message: str, code: str, hint: str | None, severity: str = "error") -> None:
        line, col = parsed.position(path) if parsed is not None else (None, None)
        issue = Issue(path=_fmt(path), message=message, line=line, column=col, hint=hint, code=code,
                      severity=severity)
        (out.errors if severity == "error" else out.warnings).append(issue)

    if not closure.checked:
        add((), closure.message, "build.not_checked",
            "Run again when the repository indexes can be fetched (or configure packages.sources "
            "with a local mirror).", "warning")
        return out
    hard = "error" if closure.complete else "warning"
    for name in closure.missing:
        sugg = closure.suggestions.get(name)
        add(_package_path(data, name), f"package {name} is in no configured repository for "
            f"{closure.dist}/{closure.arch}", "build.missing_package",
            f"Try: {', '.join(sugg)}." if sugg else "Check the name with verify_packages.")
    for name, providers in closure.virtual.items():
        add(_package_path(data, name), f"{name} is a virtual package; provided by {', '.join(providers[:8])}",
            "build.virtual_package", f"Name the one you want, e.g. {providers[0]}.", "warning")
    for u in closure.unresolvable:
        root = u.chain[0] if u.chain else None
        add(_package_path(data, root) if root else ("systemConfig", "packages"), u.message,
            "build.unresolvable",
            "Add a repository that provides it, pick another alternative, or drop "
            f"{root or 'the package'}.", hard)
    for c in closure.conflicts:
        add(_package_path(data, c.chain[0] if c.chain else c.package), c.message, "build.conflict",
            f"Keep only one of {c.chain[0] if c.chain else c.package} and "
            f"{c.other_chain[0] if c.other_chain else c.other}.")
    if not closure.complete:
        failed = [s for s in closure.sources if not s.ok]
        first = f" (e.g. {failed[0].source}: {failed[0].error})" if failed else ""
        add((), f"{len(failed)} repository index(es) could not be read{first}; the closure may be incomplete "
            "and dependencies found nowhere are reported as warnings", "build.incomplete",
            "Make the repository reachable (or configure a mirror in packages.sources).", "warning")
    fit = check_disk_fit(data, closure.installed_bytes, [p.name for p in closure.packages])
    out.disk = fit
    if fit.status == "too_small":
        hint = (f"Set disk.size to {fit.min_disk_bytes // 1024**3}GiB or larger." if fit.min_disk_bytes
                else "Make the root partition larger or drop packages.")
        # An incomplete closure only makes the real need larger, so too small stays an error.
        add(_parse_path(fit.path), fit.message, "build.disk_too_small", hint)
    elif fit.status == "tight":
        add(_parse_path(fit.path), fit.message, "build.disk_tight",
            "Leave at least 15 % headroom for updates and logs.", "warning")
    for note in fit.notes:
        add(_parse_path(fit.path), note, "build.disk_note", None, "warning")
    return out


def build_check_step(engine: Any, yaml_text: str) -> dict[str, Any]:
    """The agent loop's "will it build?" step: a compact verdict for a drafted template.

    Called from server/agent/loop.py when ``agent.check_build`` is on (off by default: it reads full
    repository indexes). Never raises; a failure becomes a verdict that says the check was skipped.
    ``errors``/``warnings`` are validation-style lines the fix loop can feed back to the model."""
    try:
        build = engine.check_build(yaml=yaml_text)
    except (ValueError, RuntimeError, OSError) as exc:
        return {"ok": None, "verdict": f"Build check skipped: {exc}", "errors": [], "warnings": []}
    c = build.closure
    if not c.checked:
        verdict = f"Build check not run: {c.message}"
    elif build.errors:
        verdict = f"It would NOT build as is: {'; '.join(i.message for i in build.errors[:3])}."
    else:
        verdict = (f"Install closure: {len(c.packages)} packages, {c.installed_bytes / 1024**3:.2f} GiB"
                   + (f"; {build.disk.message}" if build.disk is not None and build.disk.checked else "") + ".")
    return {
        "ok": build.ok if c.checked else None,
        "verdict": verdict,
        "errors": [str(i) for i in build.errors],
        "warnings": [str(i) for i in build.warnings],
        "package_count": len(c.packages),
        "installed_bytes": c.installed_bytes,
        "min_disk_bytes": build.disk.min_disk_bytes if build.disk is not None else None,
    }
