"""The agent loop: retrieve → generate → validate → fix → verify → record (SPEC §4–5).

Every template we hand back has been through the validator; ``valid`` is the
validator's verdict, never the model's. The offline composer is both a
provider of its own and the deterministic safety net under the LLM ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import difflib
import logging
import re
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ..composer import compose as composer
from ..composer.adherence import unmet, want_from_spec
from ..composer.answers import summarize
from ..composer.base import choose_base, strip_plan
from ..composer.output import conform_text, dump_yaml
from ..composer.request_parser import parse_request
from ..composer.request_spec import RequestSpec
from ..core.yamlsafe import YamlError, load_mapping
from ..knowledge.loader import load_capabilities
from ..llm.chat import CallbackProvider, ChatMessage, ChatProvider, LLMError, extract_yaml, select_provider
from ..validation.report import ValidationReport
from ..validation.upstream import conform
from ..validation.validator import validate_text
from . import prompts
from .repair import complete_from_base, merge_onto_base, prune_unknown, salvage_yaml
from .spec_plan import merge_specs, spec_schema

if TYPE_CHECKING:
    from .services import AgentServices

log = logging.getLogger(__name__)

Progress = Callable[[float, float, str], Awaitable[None]]
GROUNDING = 3
MAX_PROBLEM_LINES = 15
CONFLICT_RETRIES = 3
_REVERT = re.compile(
    r"^\s*(?:please\s+)?(?:undo|revert|roll\s*back|go\s+back)\b(?:.*?\b(?:revision|version|rev|v)\s*#?\s*(\d+))?",
    re.IGNORECASE,
)


_REVERT_NOTE = re.compile(r"^revert to revision (\d+)$")


def _undo_target(conv: Any) -> int | None:
    """The revision one step back in the *edit* history: an undo records itself as a new revision ("revert
    to revision N"), so a second undo must go back from N, not from the undo itself (which would redo)."""
    notes = {r.revision: r.note for r in conv.revisions}
    position = conv.current_revision
    seen: set[int] = set()
    while position not in seen:
        seen.add(position)
        m = _REVERT_NOTE.match(notes.get(position, "") or "")
        if not m:
            break
        position = int(m.group(1))
    target = position - 1
    return target if target >= 1 and (target in notes or not notes) else None


def newest_dist(family_id: str) -> str | None:
    """The newest supported release of an OS family (by its release number), e.g. ubuntu -> ubuntu26."""
    family = load_capabilities().families.get(family_id)
    if family is None or not family.dists:
        return None

    def release(dist: Any) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", dist.release or dist.id))

    return max(family.dists.values(), key=release).id


class AgentError(ValueError):
    """A request the agent cannot carry out; the message says what to do instead."""


@dataclass
class AgentResult:
    conversation_id: str
    revision: int
    yaml: str
    valid: bool
    errors: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    packages: dict[str, Any] | None
    grounded_on: list[str]
    provider: str
    attempts: int
    explanation: str
    mode: str = "generate"  # generate | refine | question | revert
    changes: list[str] = field(default_factory=list)
    diff: str = ""
    answer: str | None = None
    saved_to: str | None = None
    skipped_providers: list[str] = field(default_factory=list)
    # One entry per LLM call: the validator's verdict on that answer (after completion in the compact
    # style), its error codes, latency and token counts. Empty when no LLM was asked.
    trace: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was not understood / applied, one line each
    unsupported: list[str] = field(default_factory=list)  # unsupported targets named, with closest choices


@dataclass
class _Draft:
    yaml: str
    report: ValidationReport
    provider: str
    attempts: int
    notes: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    # The LLM path failed: the caller should use the offline composer's draft instead (typed, not a note).
    fallback: bool = False


def _issues(report: ValidationReport) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [i.to_dict() for i in report.errors], [i.to_dict() for i in report.warnings]


def _problem_text(report: ValidationReport) -> str:
    lines = [f"- {issue}" for issue in report.errors[:MAX_PROBLEM_LINES]]
    return "\n".join(lines) or "- the reply contained no YAML template"


def _no_yaml_report() -> ValidationReport:
    from ..validation.report import Issue

    issue = Issue(path="$", message="the model's reply contained no YAML template", line=None, column=None,
                  hint="reply with one ```yaml block", code="llm.no_yaml", severity="error")
    return ValidationReport(False, [issue], [], None)


def _complete(text: str, base: dict) -> tuple[str, list[str], bool]:
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


def _package_lists(data: dict) -> tuple[list[Any], list[Any]]:
    system = data.get("systemConfig") or {}
    return list(system.get("packages") or []), list((system.get("kernel") or {}).get("packages") or [])


def _unmet_groups(data: dict, spec: Any) -> list[str]:
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
    if _package_lists(probed) == _package_lists(data):
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
        hints.append("remove from systemConfig.packages: " + ", ".join(spec.remove_packages))
    if spec.add_groups:
        hints.append("add to systemConfig.packages the packages for: " + ", ".join(spec.add_groups))
    if spec.hostname:
        hints.append(f"systemConfig.hostname = {spec.hostname}")
    if spec.disk_size:
        hints.append(f"disk.size = {spec.disk_size}")
    if spec.kernel_cmdline_append:
        hints.append("add to systemConfig.kernel.cmdline: " + " ".join(spec.kernel_cmdline_append))
    return hints


def unified_diff(old: str, new: str, old_rev: int, new_rev: int) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"revision {old_rev}", tofile=f"revision {new_rev}"))


class Agent:
    def __init__(self, engine: AgentServices):
        self.engine = engine
        self.settings = engine.settings
        self._locks: weakref.WeakValueDictionary[tuple[int, str], anyio.Lock] = weakref.WeakValueDictionary()
        self._locks_guard = threading.Lock()
        self._known_cache: tuple[tuple[int, int], set[str]] | None = None

    def _clean_text(self, text: str | None, what: str, advice: str) -> str:
        """Whitespace-normalised user text, or an AgentError saying what to send instead."""
        text = " ".join((text or "").split())
        if not text:
            raise AgentError(f"{what} is empty: {advice}")
        limit = self.settings.search.max_query_chars
        if len(text) > limit:
            raise AgentError(f"{what} is {len(text):,} characters; keep it under {limit:,} (one thing at a time "
                             "works best)")
        return text

    # ---- providers -----------------------------------------------------------
    async def provider(self, sampling: CallbackProvider | None) -> tuple[ChatProvider, list[str]]:
        ollama, openai = self.engine.chat_providers()
        return await select_provider(self.settings.provider, ollama=ollama, openai=openai, sampling=sampling)

    # ---- generation ----------------------------------------------------------
    async def generate(self, request: str, *, conversation_id: str | None = None, os: str | None = None,
                       dist: str | None = None, arch: str | None = None, image_type: str | None = None,
                       save_as: str | None = None, overwrite: bool = False,
                       sampling: CallbackProvider | None = None, progress: Progress | None = None) -> AgentResult:
        request = self._clean_text(request, "request", "describe the image, e.g. 'minimal ubuntu 24.04 edge "
                                   "image with docker'")
        if save_as:
            self.engine.check_save_name(save_as, overwrite)
        await self._progress(progress, 0, "understanding the request and retrieving grounding templates")
        constraints = {"os": os, "dist": dist, "arch": arch, "imageType": image_type}
        spec = await anyio.to_thread.run_sync(self.understand, request, constraints)
        grounding = await anyio.to_thread.run_sync(self._grounding, request, spec.os, spec.dist, spec.arch,
                                                   spec.image_type or "raw")
        if not grounding:
            raise AgentError("no templates are indexed to ground generation on; check OIC_AI_TEMPLATES_DIR")
        grounding = choose_base(grounding, spec, load_capabilities())
        provider, skipped = await self.provider(sampling)
        await self._progress(progress, 1, f"generating with {provider.name}")
        offline_draft = await anyio.to_thread.run_sync(self._compose, request, grounding, spec)
        if provider.name == "offline":
            draft = offline_draft
        elif self.settings.agent.llm_mode == "plan" and callable(getattr(provider, "complete_json", None)):
            draft = await self._planned(provider, request, spec, grounding, offline_draft)
        else:
            try:
                draft = await self._llm_generate(provider, request, constraints, grounding, progress, spec)
            except LLMError as exc:
                if self.settings.provider != "auto":
                    raise
                # auto mode promised "the best available": the deterministic composer still is.
                draft = _Draft("", _no_yaml_report(), provider.name, 1, [f"{provider.name} failed ({exc})"],
                               fallback=True)
            draft = await anyio.to_thread.run_sync(self._enforce, draft, spec, offline_draft)
        draft.notes += self._honesty_notes(draft, spec, arch_named=bool(arch or spec.arch_named))
        await self._progress(progress, 3, "verifying packages")
        packages = await anyio.to_thread.run_sync(self._verify, draft)
        grounded_on = [name for name, _text, _data in grounding]
        conv_id, revision = await anyio.to_thread.run_sync(
            self._record_new, conversation_id, request, draft, grounded_on)
        saved = await anyio.to_thread.run_sync(self._save, draft, save_as, overwrite) if save_as else None
        await self._progress(progress, 4, "done")
        errors, warnings = _issues(draft.report)
        return AgentResult(
            conversation_id=conv_id, revision=revision, yaml=draft.yaml, valid=draft.report.valid, errors=errors,
            warnings=warnings, packages=packages, grounded_on=grounded_on, provider=draft.provider,
            attempts=draft.attempts, explanation=self._explain_generation(draft, grounding, packages, spec),
            changes=draft.changes, saved_to=saved, skipped_providers=skipped, trace=draft.trace,
            notes=list(draft.notes), unsupported=list(spec.unsupported))

    # ---- understanding -------------------------------------------------------
    def known_packages(self) -> set[str]:
        """Every package of every indexed template: with the capability knowledge (which the parser adds),
        the names a request word may be taken for."""
        index = self.engine.index
        if index is None:
            return set()
        key = id(index), len(getattr(index, "_records", None) or ())
        if self._known_cache and self._known_cache[0] == key:
            return self._known_cache[1]
        names = {p for record in index.records() for p in record.packages}
        self._known_cache = (key, names)
        return names

    def understand(self, text: str, constraints: dict[str, str | None] | None = None) -> RequestSpec:
        """The one parse of a request: every later step (grounding, composer, enforcement, the adherence check,
        the explanation) reads this object. Explicit tool arguments win over words in the text."""
        self.engine.ready()
        caps = load_capabilities()
        spec = parse_request(text, known_packages=self.known_packages())
        spec.is_question = False
        given = constraints or {}
        spec.arch_named = bool(spec.arch)
        if given.get("os"):
            spec.os = caps.family_of(given["os"]) or given["os"]
        if given.get("dist"):
            spec.dist = caps.dist_of(given["dist"]) or given["dist"]
            spec.os = caps.family_of(spec.dist) or spec.os
        if given.get("arch"):
            spec.arch = caps.arch_of(given["arch"]) or given["arch"]
            spec.arch_named = True
        if given.get("imageType"):
            spec.image_type = given["imageType"]
        if spec.os and not spec.dist:
            spec.dist = newest_dist(spec.os)
            family = caps.families.get(spec.os)
            if family and len(family.dists) > 1 and spec.dist:
                spec.notes.append(f"no release named: using the newest supported, {caps.dists[spec.dist].label}")
        if not spec.arch:
            spec.arch = "x86_64"  # the default target; the explanation says so
        self._place_by_index(spec)
        return spec

    def _place_by_index(self, spec: RequestSpec) -> None:
        """Words the rules could not place that the target's repository index knows are packages after all
        ("debian 13 with valkey"). Uses the package verifier, so its settings decide whether indexes are
        downloaded or only read from the cache; without an index the words stay reported as not understood."""
        words = [u for u in spec.unparsed if re.fullmatch(r"[a-z][a-z0-9+._-]{1,60}", u)]
        if not words or not self.settings.agent.verify_packages or not spec.dist:
            return
        try:
            found = set(self.engine.verify_packages(words, os=spec.os, dist=spec.dist, arch=spec.arch).found)
        except (ValueError, RuntimeError, OSError) as exc:
            log.debug("index check of %s skipped: %s", words, exc)
            return
        placed = [w for w in words if w in found]
        spec.add_packages += [w for w in placed if w not in spec.add_packages]
        spec.unparsed = [u for u in spec.unparsed if u not in placed]

    def _honesty_notes(self, draft: _Draft, spec: RequestSpec, *, arch_named: bool) -> list[str]:
        """What the answer must say: unsupported targets, defaults chosen, stated facts that did not land."""
        notes = [f"unsupported: {u}" for u in spec.unsupported]
        if not arch_named:
            notes.append("no architecture named: built for x86_64")
        if spec.corrected:
            notes.append("read as: " + ", ".join(spec.corrected))
        if isinstance(draft.report.data, dict):
            target = draft.report.data.get("target") or {}
            missed = unmet(draft.report.data, want_from_spec(spec, str(target.get("dist") or "") or None))
            known = " ".join(draft.notes)
            notes += [f"not applied: {m}" for m in missed if m not in known]
        return notes

    async def _planned(self, provider: ChatProvider, request: str, spec: RequestSpec,
                       grounding: list[tuple[str, str, dict]], offline: _Draft) -> _Draft:
        """The LLM plans (a RequestSpec as schema-constrained JSON), the rules' facts win, the composer executes.
        Whatever goes wrong on the model's side, the offline draft stands."""
        try:
            answer = await provider.complete_json(  # type: ignore[attr-defined]
                [ChatMessage(r, c) for r, c in prompts.spec_messages(request, spec_schema(), grounding)],
                spec_schema(), name="request_spec")
        except (LLMError, ValueError, TypeError) as exc:
            offline.notes.append(f"{provider.name} could not plan ({exc}); used the offline understanding")
            offline.provider = f"{provider.name}+offline"
            return offline
        merged, taken = merge_specs(spec, answer, self.known_packages(), load_capabilities())
        if not taken:
            offline.provider = f"{provider.name}+offline"
            offline.notes.append(f"{provider.name}'s plan added nothing to the offline understanding")
            return offline
        draft = await anyio.to_thread.run_sync(self._compose, request, grounding, merged)
        draft.provider = f"{provider.name}+composer"
        draft.notes.append(f"from {provider.name}'s plan: {', '.join(taken)}")
        if not draft.report.valid and offline.report.valid:
            offline.notes.append(f"{provider.name}'s plan gave an invalid template; kept the offline one")
            return offline
        return draft

    def _grounding(self, request: str, os: str | None, dist: str | None, arch: str | None,
                   image_type: str | None) -> list[tuple[str, str, dict]]:
        self.engine.ready()
        searcher = self.engine.searcher
        assert searcher is not None
        self.engine.refresh()
        records: list[Any] = []
        # Exact filters first; relaxed ones top the list up to GROUNDING examples (the base is then chosen by
        # compose_base.choose_base, which puts templates of the requested target first).
        for filters in ({"os": os, "dist": dist, "arch": arch, "image_type": image_type},
                        {"os": os, "dist": dist, "arch": None, "image_type": None},
                        {"os": None, "dist": None, "arch": None, "image_type": None}):
            known = {k: v for k, v in filters.items() if v and v in self.engine.index.known_values(k)}
            if any(filters.values()) and len(known) != len([v for v in filters.values() if v]):
                continue
            outcome = searcher.search(request, GROUNDING, use_threshold=False, **filters)
            seen = {r.name for r in records}
            records += [r.record for r in outcome.results if r.record.name not in seen]
            if len(records) >= GROUNDING:
                break
        out: list[tuple[str, str, dict]] = []
        for record in records[:GROUNDING]:
            try:
                text = self.engine.index.read_text(record)
                out.append((record.name, text, load_mapping(text).data))
            except (OSError, ValueError) as exc:  # YamlError is a ValueError
                log.warning("grounding template %s unreadable: %s", record.name, exc)
        return out

    def _compose(self, request: str, grounding: list[tuple[str, str, dict]], spec: RequestSpec) -> _Draft:
        caps = load_capabilities()
        name, _text, base = grounding[0]
        strip = strip_plan(name, base, spec, request, caps)
        result = composer.compose(request, base, base_file=name, spec=copy.deepcopy(spec), strip_groups=strip)
        report = validate_text(result.yaml)
        notes = [f"not understood: {u}" for u in result.unhandled]
        return _Draft(result.yaml, report, "offline", 1, notes, result.changes)

    async def _llm_generate(self, provider: ChatProvider, request: str, constraints: dict[str, str | None],
                            grounding: list[tuple[str, str, dict]], progress: Progress | None,
                            spec: RequestSpec) -> _Draft:
        style = self.settings.agent.prompt_style
        messages = prompts.generation_messages(request, {k: v for k, v in constraints.items() if v},
                                               grounding, style, hints=request_hints(spec, constraints))
        return await self._llm_loop(provider, messages, grounding[0][2], progress)

    async def _llm_loop(self, provider: ChatProvider, messages: list[tuple[str, str]], base: dict,
                        progress: Progress | None) -> _Draft:
        """Ask, validate, feed errors back; then repair deterministically if still invalid.

        In the compact style the model answers with only the sections it changes; each answer is completed
        from ``base`` (the grounding example, or the current template when refining) before it is validated,
        and a fix request shows the model that completed document. Either way the draft's report is the
        validator's verdict on exactly the text the draft carries.
        """
        cfg = self.settings.agent
        compact = cfg.prompt_style == "compact"
        attempts = 0
        best: _Draft | None = None
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
                text, notes, as_written = await anyio.to_thread.run_sync(_complete, text, current)
                text, more = await anyio.to_thread.run_sync(conform_text, text)
                moved += more
            if moved:
                notes += moved
                as_written = False
            report = await anyio.to_thread.run_sync(validate_text, text) if text else _no_yaml_report()
            log.info("llm %s attempt %d: %s (%.1fs, %s completion tokens)", provider.name, attempts,
                     "valid" if report.valid else f"{len(report.errors)} error(s)", reply.latency_s,
                     reply.completion_tokens)
            trace.append({"attempt": attempts, "valid": report.valid,
                          "valid_as_written": report.valid if as_written is None else as_written,
                          "errors": len(report.errors),
                          "codes": [e.code for e in report.errors][:MAX_PROBLEM_LINES], "has_yaml": bool(text),
                          "latency_s": round(reply.latency_s, 3), "prompt_tokens": reply.prompt_tokens,
                          "completion_tokens": reply.completion_tokens})
            draft = _Draft(text or "", report, provider.name, attempts, notes)
            if best is None or len(report.errors) <= len(best.report.errors):
                best = draft  # ties go to the later answer: it has seen the errors
            if report.valid or not cfg.auto_fix or attempts > cfg.max_fix_attempts:
                break
            await self._progress(progress, 2, f"fixing {len(report.errors)} error(s), attempt {attempts}")
            if compact:
                if isinstance(report.data, dict):
                    current = report.data
                messages = prompts.compact_fix_messages(text or reply.text, _problem_text(report))
            else:
                messages = prompts.fix_messages(messages, reply.text, _problem_text(report))
        assert best is not None
        best.attempts = attempts
        best.trace = trace
        if best.report.valid:
            return best
        repaired = await anyio.to_thread.run_sync(self._repair, best, base)
        repaired.trace = trace
        return repaired

    def _repair(self, draft: _Draft, base: dict) -> _Draft:
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
                return _Draft(text, report, f"{draft.provider}+repair", draft.attempts, [*draft.notes, note], [])
        if not self.settings.agent.require_valid_output:
            draft.notes.append("the template is still invalid; see errors")
            return draft
        note = (f"the model's template stayed invalid after {draft.attempts} attempt(s) "
                f"({'; '.join(remaining[:3])}); what is returned instead is the offline composer's work on the "
                "same starting template")
        return _Draft(draft.yaml, draft.report, draft.provider, draft.attempts, [note], [], fallback=True)

    def _enforce(self, draft: _Draft, spec: RequestSpec, offline: _Draft) -> _Draft:
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
        missing += _unmet_groups(draft.report.data, spec)
        if not missing:
            return draft
        data, changes = composer.apply_spec(draft.report.data, copy.deepcopy(spec))
        text = dump_yaml(data)
        report = validate_text(text)
        if not report.valid:
            draft.notes.append(f"request not fully met: {', '.join(missing)}")
            return draft
        return _Draft(text, report, draft.provider, draft.attempts,
                      [*draft.notes, f"enforced what the model missed: {', '.join(missing)}"], changes, draft.trace)

    def _verify(self, draft: _Draft) -> dict[str, Any] | None:
        if not self.settings.agent.verify_packages or not draft.yaml:
            return None
        try:
            res = self.engine.verify_packages(yaml=draft.yaml)
        except (ValueError, RuntimeError, OSError) as exc:
            return {"verified": False, "message": f"package verification skipped: {exc}", "found": [],
                    "missing": [], "unchecked": [], "suggestions": {}}
        d = res.to_dict()
        out = {"verified": bool(d.get("complete", d["verified"])), "message": d["message"], "found": d["found"],
               "missing": d["missing"], "unchecked": d["unchecked"], "suggestions": d["suggestions"]}
        if getattr(self.settings.agent, "check_build", False):  # closure + disk fit (server/packages/build_check.py)
            from ..packages.build_check import build_check_step

            out["build"] = build_check_step(self.engine, draft.yaml)
        return out

    def _record_new(self, conversation_id: str | None, request: str, draft: _Draft,
                    grounded_on: list[str]) -> tuple[str, int]:
        store = self.engine.conversations
        conv = store.create(conversation_id, metadata={"grounded_on": grounded_on, "provider": draft.provider})
        revision = store.add_revision(conv.id, draft.yaml, note=f"generated: {request[:200]}",
                                      valid=draft.report.valid)
        store.add_message(conv.id, "user", request)
        store.add_message(conv.id, "assistant", f"revision {revision} ({'valid' if draft.report.valid else 'invalid'})")
        log.info("conversation %s: revision %d generated by %s", conv.id, revision, draft.provider)
        return conv.id, revision

    def _save(self, draft: _Draft, save_as: str, overwrite: bool) -> str:
        if not draft.report.valid:
            raise AgentError("not saved: the template is invalid; fix the errors first or refine it")
        return str(self.engine.save_template(draft.yaml, save_as, overwrite))

    def _explain_generation(self, draft: _Draft, grounding: list[tuple[str, str, dict]],
                            packages: dict[str, Any] | None, spec: RequestSpec | None = None) -> str:
        data = draft.report.data or {}
        target = data.get("target") or {}
        name = (data.get("image") or {}).get("name", "template")
        parts = [f"Generated '{name}' for {target.get('os')}/{target.get('dist')} {target.get('arch')} "
                 f"{target.get('imageType')} with the {draft.provider} provider, grounded on "
                 f"{', '.join(n for n, _t, _d in grounding)}."]
        if draft.changes:
            parts.append("Changes from the base template: " + "; ".join(draft.changes[:12]) + ".")
        parts.extend(n[0].upper() + n[1:] + "." for n in draft.notes if n)
        parts.append(self._verdict(draft.report, packages))
        return " ".join(parts)

    @staticmethod
    def _verdict(report: ValidationReport, packages: dict[str, Any] | None) -> str:
        if report.valid:
            text = f"It passes validation ({len(report.warnings)} warning(s))."
        else:
            first = "; ".join(str(e) for e in report.errors[:3])
            text = f"It is NOT valid: {len(report.errors)} error(s) remain, e.g. {first}."
        if packages:
            if packages.get("missing"):
                text += f" Missing packages: {', '.join(packages['missing'])} (see suggestions)."
            elif packages.get("verified"):
                text += f" All {len(packages.get('found', []))} packages exist in the distribution's repositories."
            else:
                reason = str(packages.get("message", "")).split("\n")[0].split(" (e.g.")[0].split(". ")[0]
                text += f" Packages could not be verified ({reason}); none is reported missing."
            if packages.get("build"):
                text += " " + packages["build"]["verdict"]
        return text

    # ---- refinement ----------------------------------------------------------
    async def refine(self, conversation_id: str, instruction: str, *, save_as: str | None = None,
                     overwrite: bool = False, sampling: CallbackProvider | None = None,
                     progress: Progress | None = None) -> AgentResult:
        """Refinements of one conversation run one at a time in this process (so none is lost); a revision
        written meanwhile by another process makes the refinement start again from the new revision."""
        from .conversations import ConcurrentModification

        async with self._conversation_lock(conversation_id), self._store_lock(conversation_id):
            for attempt in range(CONFLICT_RETRIES):
                try:
                    return await self._refine_once(conversation_id, instruction, save_as=save_as,
                                                   overwrite=overwrite, sampling=sampling, progress=progress)
                except ConcurrentModification:
                    if attempt == CONFLICT_RETRIES - 1:
                        raise AgentError(f"conversation {conversation_id} kept changing under this refinement "
                                         f"({CONFLICT_RETRIES} tries); try again") from None
                    log.info("conversation %s changed meanwhile; refining again", conversation_id)
            raise AssertionError("unreachable")

    @contextlib.asynccontextmanager
    async def _store_lock(self, conversation_id: str) -> AsyncIterator[None]:
        """Across replicas: a store shared by several servers (PostgreSQL) serialises one conversation's
        refinements itself, so they queue instead of conflicting."""
        exclusive = getattr(self.engine.conversations, "exclusive", None)
        if exclusive is None:
            yield
            return
        held = exclusive(conversation_id)
        await anyio.to_thread.run_sync(held.__enter__)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(held.__exit__, None, None, None)

    def _conversation_lock(self, conversation_id: str) -> anyio.Lock:
        # Keyed by event loop too: the CLI runs each turn in a fresh loop, and a lock belongs to one loop.
        key = (id(asyncio.get_running_loop()), conversation_id)
        with self._locks_guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = anyio.Lock()
            return lock

    async def _refine_once(self, conversation_id: str, instruction: str, *, save_as: str | None = None,
                           overwrite: bool = False, sampling: CallbackProvider | None = None,
                           progress: Progress | None = None) -> AgentResult:
        instruction = self._clean_text(instruction, "instruction", "say what to change, e.g. 'add docker' or "
                                       "'set the disk to 8GiB'")
        if save_as:
            self.engine.check_save_name(save_as, overwrite)
        conv = await anyio.to_thread.run_sync(self.engine.conversations.get, conversation_id)
        if conv.current is None:
            raise AgentError(f"conversation {conversation_id} has no template yet; call generate_template first")
        current = conv.current
        meta = conv.metadata or {}
        grounded_on = list(meta.get("grounded_on") or [])
        store = self.engine.conversations
        await anyio.to_thread.run_sync(store.add_message, conv.id, "user", instruction)

        revert = _REVERT.match(instruction)
        if revert:
            return await self._revert(conv, revert, grounded_on)
        data = load_mapping(current.yaml).data if current.yaml else None
        if isinstance(data, dict) and composer.is_explanation_question(instruction):
            answer = summarize(data, instruction)
            await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", answer)
            report = await anyio.to_thread.run_sync(validate_text, current.yaml)
            errors, warnings = _issues(report)
            return AgentResult(conv.id, current.revision, current.yaml, report.valid, errors, warnings, None,
                               grounded_on, "offline", 0, answer, mode="question", answer=answer)

        await self._progress(progress, 1, "applying the change")
        spec = await anyio.to_thread.run_sync(self._understand_instruction, instruction, data)
        draft = await self._refine_draft(instruction, current.yaml, data, conv, sampling, progress, spec)
        draft.notes += [f"unsupported: {u}" for u in spec.unsupported if f"unsupported: {u}" not in draft.notes]
        if isinstance(data, dict) and isinstance(draft.report.data, dict) and not spec.is_empty():
            draft.notes += [f"not applied: {m}" for m in unmet(draft.report.data, want_from_spec(
                spec, str((draft.report.data.get("target") or {}).get("dist") or "") or None))]
        if isinstance(data, dict) and (draft.report.data == data or draft.yaml == current.yaml):
            # Nothing changed: no new revision; say what was not understood.
            told = [n for n in draft.notes if n]
            summary = ("Nothing changed; no new revision (still revision "
                       f"{current.revision}). " + (" ".join(n[0].upper() + n[1:] + "." for n in told) if told else
                                                   f"Not understood: {instruction!r}."))
            await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
            report = await anyio.to_thread.run_sync(validate_text, current.yaml)
            errors, warnings = _issues(report)
            return AgentResult(conv.id, current.revision, current.yaml, report.valid, errors, warnings, None,
                               grounded_on, draft.provider, draft.attempts, summary, mode="refine",
                               changes=[], notes=told or [f"not understood: {instruction}"],
                               unsupported=list(spec.unsupported))
        await self._progress(progress, 3, "verifying packages")
        packages = await anyio.to_thread.run_sync(self._verify, draft)
        revision = await anyio.to_thread.run_sync(
            lambda: store.add_revision(conv.id, draft.yaml, note=f"refined: {instruction[:200]}",
                                       valid=draft.report.valid, expected_revision=current.revision))
        diff = unified_diff(current.yaml, draft.yaml, current.revision, revision)
        changes = draft.changes or ([] if not diff else ["see diff"])
        summary = (f"Revision {revision}: " + ("; ".join(changes[:12]) if changes else "no change was needed") + ".")
        if draft.notes:
            summary += " " + " ".join(n[0].upper() + n[1:] + "." for n in draft.notes)
        summary += " " + self._verdict(draft.report, packages)
        await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
        saved = await anyio.to_thread.run_sync(self._save, draft, save_as, overwrite) if save_as else None
        errors, warnings = _issues(draft.report)
        log.info("conversation %s: revision %d refined by %s", conv.id, revision, draft.provider)
        return AgentResult(conv.id, revision, draft.yaml, draft.report.valid, errors, warnings, packages,
                           grounded_on, draft.provider, draft.attempts, summary, mode="refine",
                           changes=changes, diff=diff, saved_to=saved, trace=draft.trace, notes=list(draft.notes),
                           unsupported=list(spec.unsupported))

    def _understand_instruction(self, instruction: str, data: dict | None) -> RequestSpec:
        """The one parse of an edit instruction (packages of the current template and the library known)."""
        self.engine.ready()
        names = set(self.known_packages())
        if isinstance(data, dict):
            names |= {str(p) for p in ((data.get("systemConfig") or {}).get("packages") or [])}
        spec = parse_request(instruction, known_packages=names)
        spec.arch_named = bool(spec.arch)
        return spec

    async def _refine_draft(self, instruction: str, current_yaml: str, data: dict | None, conv: Any,
                            sampling: CallbackProvider | None, progress: Progress | None,
                            spec: RequestSpec) -> _Draft:
        offline: _Draft | None = None
        if isinstance(data, dict):
            result = await anyio.to_thread.run_sync(
                lambda: composer.apply_instruction(data, instruction, spec=copy.deepcopy(spec)))
            report = await anyio.to_thread.run_sync(validate_text, result.yaml)
            offline = _Draft(result.yaml, report, "offline", 1, [f"not understood: {u}" for u in result.unhandled],
                             result.changes)
            # The composer's edits are exact; use them whenever it understood the whole instruction.
            if result.changes and not result.unhandled and report.valid:
                return offline
        provider, _skipped = await self.provider(sampling)
        if provider.name == "offline":
            if offline is None:
                raise AgentError("the current template does not parse, and no LLM is available to repair it")
            return offline
        if (offline is not None and isinstance(data, dict) and self.settings.agent.llm_mode == "plan"
                and callable(getattr(provider, "complete_json", None))):
            return await self._planned_edit(provider, instruction, data, spec, offline)
        history = [(m.role, m.content) for m in conv.messages]
        messages = prompts.refinement_messages(current_yaml, instruction, history, self.settings.agent.prompt_style,
                                               data if isinstance(data, dict) else None)
        base = data if isinstance(data, dict) else {}
        try:
            draft = await self._llm_loop(provider, messages, base, progress)
        except LLMError as exc:
            if offline is None or self.settings.provider != "auto":
                raise
            offline.notes.append(f"{provider.name} failed ({exc}); used the offline composer")
            return offline
        if draft.fallback:
            if offline is not None and offline.report.valid:
                offline.notes = [*draft.notes, *offline.notes]
                offline.provider = f"{provider.name}+offline"
                offline.trace = draft.trace
                return offline
            draft.fallback = False
        if isinstance(data, dict) and draft.report.data == data:
            # A valid answer that changes nothing is not a carried-out instruction: say so.
            draft.notes.append("the model's answer left the template unchanged; the instruction was not applied")
        return draft

    async def _planned_edit(self, provider: ChatProvider, instruction: str, data: dict, spec: RequestSpec,
                            offline: _Draft) -> _Draft:
        """The edit plan from the model (schema-constrained), merged under the rules' reading, applied by the
        composer; the offline draft stands whenever the plan adds nothing or fails."""
        try:
            answer = await provider.complete_json(  # type: ignore[attr-defined]
                [ChatMessage(r, c) for r, c in prompts.spec_messages(instruction, spec_schema(), [])],
                spec_schema(), name="edit_plan")
        except (LLMError, ValueError, TypeError) as exc:
            offline.notes.append(f"{provider.name} could not plan the edit ({exc}); used the offline understanding")
            return offline
        merged, taken = merge_specs(spec, answer, self.known_packages(), load_capabilities())
        if not taken:
            return offline
        result = await anyio.to_thread.run_sync(
            lambda: composer.apply_instruction(data, instruction, spec=copy.deepcopy(merged)))
        report = await anyio.to_thread.run_sync(validate_text, result.yaml)
        if not report.valid and offline.report.valid:
            offline.notes.append(f"{provider.name}'s edit plan gave an invalid template; kept the offline edit")
            return offline
        notes = [f"not understood: {u}" for u in result.unhandled if u not in {p for t in taken for p in t.split()}]
        return _Draft(result.yaml, report, f"{provider.name}+composer", 1,
                      [*notes, f"from {provider.name}'s plan: {', '.join(taken)}"], result.changes)

    async def _revert(self, conv: Any, match: re.Match[str], grounded_on: list[str]) -> AgentResult:
        store = self.engine.conversations
        target_rev = int(match.group(1)) if match.group(1) else _undo_target(conv)
        if target_rev is None or (target_rev == conv.current_revision and not match.group(1)):
            raise AgentError("there is no earlier revision to go back to")
        old_yaml = conv.current.yaml
        try:
            revision = await anyio.to_thread.run_sync(store.revert, conv.id, target_rev)
        except ValueError as exc:
            raise AgentError(str(exc)) from exc
        conv = await anyio.to_thread.run_sync(store.get, conv.id)
        new_yaml = conv.current.yaml
        report = await anyio.to_thread.run_sync(validate_text, new_yaml)
        errors, warnings = _issues(report)
        summary = f"Reverted to revision {target_rev}; it is now revision {revision}."
        await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
        return AgentResult(conv.id, revision, new_yaml, report.valid, errors, warnings, None, grounded_on,
                           "offline", 0, summary, mode="revert", changes=[f"reverted to revision {target_rev}"],
                           diff=unified_diff(old_yaml, new_yaml, revision - 1, revision))

    @staticmethod
    async def _progress(progress: Progress | None, step: float, message: str) -> None:
        if progress is not None:
            try:
                await progress(step, 4, message)
            except Exception:  # noqa: BLE001 - progress is best effort; never fail the call for it
                log.debug("progress report failed", exc_info=True)

