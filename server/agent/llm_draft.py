"""Drafting with an LLM: ask, validate, feed the errors back, then repair deterministically (SPEC §4–5).

The validator's verdict on exactly the text a draft carries is its report; the model's word is never taken
for it. A compact-style answer (only the sections it changes) is completed from the base first.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import anyio

from ..composer import compose as composer
from ..composer.adherence import unmet, want_from_spec
from ..composer.output import conform_text, dump_yaml
from ..composer.request_spec import DATABASE, RequestSpec
from ..core.config import AgentSettings
from ..core.yamlsafe import YamlError, load_mapping
from ..knowledge.loader import load_capabilities
from ..knowledge.static_network import StaticAddress, static_hint
from ..llm.chat import ChatMessage, ChatProvider, extract_yaml
from ..validation.report import ValidationReport, issue
from ..validation.upstream import conform
from ..validation.validator import validate_text
from . import prompts
from .repair import complete_from_base, merge_onto_base, prune_unknown, salvage_yaml
from .results import Draft, Progress, report_progress

log = logging.getLogger(__name__)

MAX_PROBLEM_LINES = 15


def problem_text(report: ValidationReport) -> str:
    lines = [f"- {issue}" for issue in report.errors[:MAX_PROBLEM_LINES]]
    return "\n".join(lines) or "- the reply contained no YAML template"


def no_yaml_report() -> ValidationReport:
    return ValidationReport.refused(issue("$", "the model's reply contained no YAML template", "llm.no_yaml",
                                          hint="reply with one ```yaml block"))


def complete_compact(text: str, base: dict) -> tuple[str, list[str], bool]:
    """A compact-style answer (only the changed sections) completed from ``base``.

    Returns the text to validate, notes, and whether the answer was valid as written (completed, but
    without the clean-up). The clean-up is deterministic and reported: YAML syntax slips salvaged line by
    line, keys the schema does not know removed. Text with nothing to salvage comes back as it was.
    """
    salvaged: list[int] = []
    try:
        data = load_mapping(text).data
    except YamlError:
        data, salvaged = salvage_yaml(text)
    if not isinstance(data, dict):
        return text, [], False
    merged, filled = complete_from_base(data, base)
    wrote = [str(k) for k in data if k in merged]
    notes = [f"the model wrote {', '.join(wrote) or 'no section'}; the rest "
             f"({', '.join(map(str, filled))}) comes from the example unchanged"] if filled else []
    out = dump_yaml(merged)
    report = validate_text(out)
    as_written = report.valid and not salvaged
    if salvaged:
        notes.append(f"YAML syntax errors in the model's answer: changed or dropped its line(s) "
                     f"{', '.join(map(str, salvaged[:10]))}")
    if not report.valid:
        pruned, removed = prune_unknown(merged, report.errors)
        if removed:
            notes.append(f"removed keys the schema does not know: {', '.join(removed[:10])}")
            out = dump_yaml(pruned)
    return out, notes, as_written


def package_lists(data: dict) -> tuple[list[Any], list[Any]]:
    system = data.get("systemConfig") or {}
    return list(system.get("packages") or []), list((system.get("kernel") or {}).get("packages") or [])


def unmet_groups(data: dict, spec: Any) -> list[str]:
    """Package groups the request names ("with ssh", "monitoring") that the model's template lacks:
    whether the composer would still change the package lists for them."""
    if not (spec.add_groups or spec.remove_groups):
        return []
    probe = RequestSpec(add_groups=list(spec.add_groups), remove_groups=list(spec.remove_groups))
    try:
        probed, _changes = composer.apply_spec(data, probe)
    except Exception:  # noqa: BLE001 - a check that cannot run must not fail generation
        log.debug("group check failed", exc_info=True)
        return []
    if package_lists(probed) == package_lists(data):
        return []
    return [f"add {g}" for g in spec.add_groups] + [f"remove {g}" for g in spec.remove_groups]


def request_hints(spec: RequestSpec, constraints: dict[str, str | None] | None = None) -> list[str]:
    """The request's changes as the request parser understood them (once), as a checklist for the model."""
    given = {k for k, v in (constraints or {}).items() if v}
    hints = [f"target.{key} = {getattr(spec, attr)}"
             for key, attr in (("os", "os"), ("dist", "dist"), ("arch", "arch"), ("imageType", "image_type"))
             if getattr(spec, attr) and key not in given]
    if spec.add_packages:
        hints.append("add to systemConfig.packages: " + ", ".join(spec.add_packages))
    if spec.remove_packages:
        named = ["the database server packages it has" if p == DATABASE else p for p in spec.remove_packages]
        hints.append("remove from systemConfig.packages: " + ", ".join(named))
    if spec.add_groups:
        hints.append("add to systemConfig.packages the packages for: " + ", ".join(spec.add_groups))
    if spec.hostname:
        hints.append(f"systemConfig.hostname = {spec.hostname}")
    if spec.disk_size:
        hints.append(f"disk.size = {spec.disk_size}")
    if spec.kernel_cmdline_append:
        hints.append("add to systemConfig.kernel.cmdline: " + " ".join(spec.kernel_cmdline_append))
    for entry in spec.configurations:
        if entry.get("remove"):
            hints.append(f"remove from systemConfig.configurations the commands that set {entry['label']}")
            continue
        if entry.get("network"):  # written for the target's network manager; a part alone keeps the rest
            hints.append(static_hint(StaticAddress(**entry["network"]), load_capabilities().family_of(spec.os or "")))
            continue
        if entry.get("edits_only"):
            hints.append(f"where systemConfig.configurations has a command matching /{entry['replaces']}/, replace "
                         f"it with: {entry['cmd']!r}")
            continue
        hints.append(f"add to systemConfig.configurations: - cmd: {entry['cmd']!r}"
                     + (f" (and the package {', '.join(entry['packages'])})" if entry.get("packages") else ""))
    return hints


async def llm_loop(provider: ChatProvider, messages: list[tuple[str, str]], base: dict, progress: Progress | None,
                   cfg: AgentSettings) -> Draft:
    """Ask, validate, feed errors back; then repair deterministically if still invalid.

    In the compact style the model answers with only the sections it changes; each answer is completed
    from ``base`` (the grounding example, or the current template when refining) before it is validated,
    and a fix request shows the model that completed document. Either way the draft's report is the
    validator's verdict on exactly the text the draft carries.
    """
    compact = cfg.prompt_style == "compact"
    attempts = 0
    best: Draft | None = None
    base, _ = conform(base)  # a user-brought grounding template may carry ADR metadata
    current = base
    trace: list[dict[str, Any]] = []
    while True:
        attempts += 1
        reply = await provider.chat([ChatMessage(r, c) for r, c in messages], temperature=0.1,
                                    max_tokens=cfg.max_tokens, stop=prompts.STOP)
        text = extract_yaml(reply.text)
        notes: list[str] = []
        as_written: bool | None = None
        # Fields os-image-composer refuses (the ADR's metadata, copied from examples) are moved into
        # keywords/use_cases before completion and validation (so no clean-up drops their words), and
        # again after a salvage; the answer says so.
        moved: list[str] = []
        if text:
            text, moved = await anyio.to_thread.run_sync(conform_text, text)
        if text and compact and current:
            completed, notes, as_written = await anyio.to_thread.run_sync(complete_compact, text, current)
            text, more = await anyio.to_thread.run_sync(conform_text, completed)
            moved += more
        if moved:
            notes += moved
            as_written = False
        report = await anyio.to_thread.run_sync(validate_text, text) if text else no_yaml_report()
        log.info("llm %s attempt %d: %s (%.1fs, %s completion tokens)", provider.name, attempts,
                 "valid" if report.valid else f"{len(report.errors)} error(s)", reply.latency_s,
                 reply.completion_tokens)
        trace.append({"attempt": attempts, "valid": report.valid,
                      "valid_as_written": report.valid if as_written is None else as_written,
                      "errors": len(report.errors),
                      "codes": [e.code for e in report.errors][:MAX_PROBLEM_LINES], "has_yaml": bool(text),
                      "latency_s": round(reply.latency_s, 3), "prompt_tokens": reply.prompt_tokens,
                      "completion_tokens": reply.completion_tokens})
        draft = Draft(text or "", report, provider.name, attempts, notes)
        if best is None or len(report.errors) <= len(best.report.errors):
            best = draft  # ties go to the later answer: it has seen the errors
        if report.valid or not cfg.auto_fix or attempts > cfg.max_fix_attempts:
            break
        await report_progress(progress, 2, f"fixing {len(report.errors)} error(s), attempt {attempts}")
        if compact:
            if isinstance(report.data, dict):
                current = report.data
            messages = prompts.compact_fix_messages(text or reply.text, problem_text(report))
        else:
            messages = prompts.fix_messages(messages, reply.text, problem_text(report))
    assert best is not None
    best.attempts = attempts
    best.trace = trace
    if best.report.valid:
        return best
    repaired = await anyio.to_thread.run_sync(repair, best, base, cfg.require_valid_output)
    repaired.trace = trace
    return repaired


def repair(draft: Draft, base: dict, require_valid: bool) -> Draft:
    """A still-invalid answer: its valid sections on top of the base, or (when a valid answer is required) a
    fallback to the offline composer."""
    remaining = [str(e) for e in draft.report.errors[:MAX_PROBLEM_LINES]]
    data = draft.report.data if isinstance(draft.report.data, dict) else None
    salvaged: list[int] = []
    if data is None and draft.yaml:
        try:
            data = load_mapping(draft.yaml).data
        except YamlError:
            data, salvaged = salvage_yaml(draft.yaml)
    if isinstance(data, dict):
        # Keys the model invented go first, so that the rest of their section can be kept.
        data, pruned = prune_unknown(data, draft.report.errors)
        fixed = merge_onto_base(data, base)
        text = dump_yaml(fixed.data)
        report = validate_text(text)
        if report.valid:
            note = (f"the model's template still had {len(draft.report.errors)} error(s) after "
                    f"{draft.attempts} attempt(s); kept its valid sections ({', '.join(fixed.kept) or 'none'}) "
                    f"on top of the grounding template" + (f", dropped {', '.join(fixed.dropped)}"
                                                          if fixed.dropped else "")
                    + (f", removed unknown keys {', '.join(pruned)}" if pruned else "")
                    + (f", dropped or changed its unparsable line(s) {', '.join(map(str, salvaged[:10]))}"
                       if salvaged else ""))
            return Draft(text, report, f"{draft.provider}+repair", draft.attempts, [*draft.notes, note], [])
    if not require_valid:
        draft.notes.append("the template is still invalid; see errors")
        return draft
    note = (f"the model's template stayed invalid after {draft.attempts} attempt(s) "
            f"({'; '.join(remaining[:3])}); what is returned instead is the offline composer's work on the "
            "same starting template")
    return Draft(draft.yaml, draft.report, draft.provider, draft.attempts, [note], [], fallback=True)


def enforce(draft: Draft, spec: RequestSpec, offline: Draft) -> Draft:
    """Make sure the stated constraints landed (the one adherence check); fall back to the composer's draft
    when the LLM path failed."""
    if draft.fallback:
        offline.provider = f"{draft.provider}+offline"
        offline.attempts = draft.attempts
        offline.notes = [*draft.notes, *offline.notes]
        offline.trace = draft.trace
        return offline
    if not draft.report.valid or not isinstance(draft.report.data, dict):
        return draft
    missing = unmet(draft.report.data, want_from_spec(spec))
    missing += unmet_groups(draft.report.data, spec)
    if not missing:
        return draft
    data, changes = composer.apply_spec(draft.report.data, copy.deepcopy(spec))
    text = dump_yaml(data)
    report = validate_text(text)
    if not report.valid:
        draft.notes.append(f"request not fully met: {', '.join(missing)}")
        return draft
    return Draft(text, report, draft.provider, draft.attempts,
                  [*draft.notes, f"enforced what the model missed: {', '.join(missing)}"], changes, draft.trace)
