"""Refinement: a conversation's template changed by an instruction, one revision at a time.

Refinements of one conversation run one after another (a lock per conversation in this process, and the
store's own lock across replicas where it has one); a revision written meanwhile elsewhere makes the refinement
start again from it. "undo" and "revert to revision N" append the old template as a new revision.
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
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..composer import compose as composer
from ..composer.adherence import unmet, untold, want_from_spec
from ..composer.answers import summarize
from ..composer.request_parser import parse_request
from ..composer.request_spec import RequestSpec
from ..core.yamlsafe import load_mapping
from ..knowledge.loader import load_capabilities
from ..knowledge.sizes import CASUAL_SIZE, NUMBER_WORDS, number_value, template_mib
from ..llm.chat import CallbackProvider, ChatProvider, LLMError
from ..validation.validator import validate_text
from . import prompts
from .conversations import ConcurrentModification, Conversation
from .llm_draft import llm_loop
from .results import CHANGES_SHOWN, AgentError, AgentResult, Draft, Progress, issues, report_progress, verdict
from .spec_plan import PlanAsk, merge_specs, plan_ask

if TYPE_CHECKING:
    from ..core.config import AISettings
    from .services import AgentServices

log = logging.getLogger(__name__)

CONFLICT_RETRIES = 3
_REVERT = re.compile(
    r"^\s*(?:please\s+)?(?:undo|revert|roll\s*back|go\s+back)\b(?:.*?\b(?:revision|version|rev|v)\s*#?\s*(\d+))?"
    # "scratch that", "forget that", "never mind", "cancel the last change": the last edit taken back
    r"|^\s*(?:(?:oh|hmm|no|ok|okay|actually)[\s,.!]+)*(?:scratch|forget|cancel|drop|ignore)\s+(?:that|it|this|the\s+last"
    r"\s+(?:one|change|edit|step))\s*[.!]*\s*$|^\s*never\s*mind\s*[.!]*\s*$",
    re.IGNORECASE,
)


_REVERT_NOTE = re.compile(r"^revert to revision (\d+)$")
# How many steps an undo goes back: "undo the last two changes", "go back 3 steps", "undo twice".
_STEPS = re.compile(rf"\b(?:last|previous|past)\s+(\d+|{NUMBER_WORDS})\s+(?:changes|edits|steps|revisions|versions)\b"
                    rf"|\b(\d+|{NUMBER_WORDS})\s+(?:steps|times|changes|edits|revisions|versions)\b|\b(twice|thrice)\b",
                    re.IGNORECASE)

# Back to the first revision: "revert to the original", "start over from the first version".
_ORIGINAL = re.compile(r"\b(?:original|first\s+(?:version|revision|draft)|beginning)\b", re.IGNORECASE)

# A size said again as a correction of the last edit ("actually 25GB", "no, make it 30 gigs", "sorry, I meant 8G"):
# the words around the size, which must be all the instruction has.
_CORRECTION_WORDS = re.compile(r"^(?:\s|[,.!:;-]|actually|no|nope|sorry|oops|wait|i\s+meant|i\s+mean|make\s+(?:it|that)"
                               r"|let'?s\s+(?:say|do|go\s+with)|rather|instead|please|better|go\s+with)*$", re.I)


def corrected_instruction(conv: Conversation, instruction: str) -> tuple[str, int] | None:
    """("the last edit's instruction with this size", the revision it was applied to) when ``instruction`` only
    says a size again ("actually 25GB") and the last edit said one; None otherwise."""
    sizes = list(re.finditer(CASUAL_SIZE, instruction, re.I))
    if len(sizes) != 1 or not _CORRECTION_WORDS.match(instruction[:sizes[0].start()] + instruction[sizes[0].end():]):
        return None
    last = conv.current
    said = re.match(r"refined: (.*)", last.note or "", re.S) if last is not None else None
    before = undo_target(conv, 1)
    if said is None or before is None:
        return None
    earlier = list(re.finditer(CASUAL_SIZE, said.group(1), re.I))
    if not earlier:
        return None
    at = earlier[-1]
    return said.group(1)[:at.start()] + sizes[0].group(0) + said.group(1)[at.end():], before


def _users_removed_by_name(spec: RequestSpec, data: Any) -> None:
    """"delete tom", "remove tom": a removal of a bare word the template has a user by is that user's removal
    (no package of that name is known, so the reading had left it unread)."""
    system = data.get("systemConfig") if isinstance(data, dict) else None
    users = {str(u.get("name")) for u in (system or {}).get("users") or [] if isinstance(u, dict) and u.get("name")}
    for said in list(spec.unparsed):
        name = said.removeprefix("no ")
        if said != name and name in users:
            spec.unparsed.remove(said)
            spec.users.append({"action": "remove", "name": name})


def last_partition(conv: Conversation) -> str | None:
    """The mount point of the one partition the conversation's last edit added or changed, beyond root ("add a
    20GB /var/lib/rancher partition", then "make that xfs"); None when that edit touched none or several."""
    last = conv.current
    before = undo_target(conv, 1)
    if last is None or before is None or not (last.note or "").startswith("refined: "):
        return None
    try:
        old, new = (_partitions(_current_data(r.yaml)) for r in (conv.revision(before), last))
    except (ValueError, KeyError):
        return None
    added = [m for m in new if m not in old and m != "/"]
    touched = added or [m for m, shape in new.items() if m != "/" and m in old and old[m] != shape]
    return touched[0] if len(touched) == 1 else None


# Software the last edit took out, asked back by a pronoun ("add them back", "put it back", "reinstall those").
_BACK = re.compile(r"\b(?:add|put|bring|install|get)\s+(?:it|them|those|these|that|everything)\s+back\b"
                   r"|\b(?:re-?add|restore|reinstall|re-?install)\s+(?:it|them|those|these|that|everything)\b", re.I)


def _items(yaml_text: str | None, kind: str) -> list[str]:
    """A revision's ``kind`` ("cmdline": kernel arguments, "users": user names, else packages), in template order."""
    data = _current_data(yaml_text)
    system = data.get("systemConfig") if isinstance(data, dict) else None
    if not isinstance(system, dict):
        return []
    if kind == "cmdline":
        return str((system.get("kernel") or {}).get("cmdline") or "").split()
    if kind == "users":
        return [str(u.get("name")) for u in system.get("users") or [] if isinstance(u, dict)]
    return [str(p) for p in (system.get("packages") or [])]


def _last_edit(conv: Conversation, kind: str) -> tuple[list[str], list[str]]:
    """``kind``'s items before and after the conversation's last edit; both empty when there was none."""
    last, before = conv.current, undo_target(conv, 1)
    if last is None or before is None:
        return [], []
    return _items(conv.revision(before).yaml, kind), _items(last.yaml, kind)


def removed_by_last_edit(conv: Conversation) -> list[str]:
    """The packages the conversation's last edit removed, in the order the template had them."""
    had, have = _last_edit(conv, "packages")
    kept = set(have)
    return [p for p in had if p not in kept]


# What the last edit added, taken out again by a pronoun ("remove that kernel argument", "drop those packages")
_THAT = re.compile(r"\b(?:remove|drop|delete|take\s+out|get\s+rid\s+of|lose|undo|revert)\s+(?:that|those|this|these|"
                   r"the\s+(?:last|new|newly\s+added))\s+(?:(kernel\s+(?:argument|arg|parameter|param|option|flag)s?|"
                   r"(?:boot\s+|cmdline\s+)?(?:argument|parameter|option|flag)s?)|(packages?|software|tools?)|(users?|accounts?))\b",
                   re.I)


def added_by_last_edit(conv: Conversation, kind: str) -> list[str]:
    """What of ``kind`` ("cmdline", "packages", "users") the conversation's last edit added, in template order."""
    had, have = _last_edit(conv, kind)
    before = set(had)
    return [i for i in have if i not in before]


def that_of_last_edit(conv: Conversation, m: re.Match[str], spec: RequestSpec) -> None:
    """``spec`` takes out what the last edit added of the kind ``m`` (a _THAT match) names, and says so."""
    kind = "cmdline" if m.group(1) else "packages" if m.group(2) else "users"
    items = added_by_last_edit(conv, kind)
    words = {"cmdline": "kernel arguments", "packages": "packages", "users": "users"}[kind]
    if not items:
        spec.notes.append(f"'{m.group(0)}' not applied: the last edit added no {words}")
        return
    if kind == "cmdline":
        spec.kernel_cmdline_remove += items
    elif kind == "packages":
        spec.remove_packages += items
    else:
        spec.users += [{"action": "remove", "name": name} for name in items]
    spec.notes.append(f"read as the {words} the last edit added: {', '.join(items)}")


# A question about the conversation itself, not the template ("what changed since the beginning?").
_HISTORY = re.compile(r"\bwhat\s+(?:has\s+|have\s+)?changed\b|\bwhat\s+(?:did|have)\s+(?:you|we)\s+(?:change|changed|done|do)\b"
                      r"|\bwhat\s+(?:you|we)(?:'ve|\s+have)?\s+(?:changed|done|edited)\b"
                      r"|\bhistory\b|\b(?:changes|edits|revisions)\s+so\s+far\b|\blist\s+(?:the\s+|all\s+)?(?:changes|edits|revisions)\b",
                      re.I)


def history_answer(conv: Conversation) -> str:
    """The conversation's revisions, each with what made it, the current one last."""
    lines = [f"revision {r.revision}: {r.note or 'no note'}" + ("" if r.valid else " (not valid)") for r in conv.revisions]
    return "History of this conversation:\n" + "\n".join(lines) + "\nSay 'undo', 'go back N steps' or 'revert to " \
        "revision N' to return to one."


def earlier_disk(conv: Conversation, data: Any) -> tuple[int, dict[str, Any]] | None:
    """The disk section of the last revision that had one for the same architecture, while ``data`` (the image
    edited) has none: an iso made a raw disk again gets that layout back."""
    if not isinstance(data, dict) or isinstance(data.get("disk"), dict):
        return None
    arch = (data.get("target") or {}).get("arch")
    for rev in reversed(conv.revisions):
        try:
            old = _current_data(rev.yaml)
        except ValueError:
            continue
        if isinstance(old, dict) and isinstance(old.get("disk"), dict) and (old.get("target") or {}).get("arch") == arch:
            return rev.revision, old["disk"]
    return None


def _partitions(data: Any) -> dict[str, tuple[object, int | None]]:
    """Mount point -> (filesystem, size in MiB; None for the one that fills the disk): what an edit of a
    partition changes, not where it starts, which an edit of another one before it moves."""
    disk = data.get("disk") if isinstance(data, dict) else None
    parts = disk.get("partitions") if isinstance(disk, dict) else None
    out: dict[str, tuple[object, int | None]] = {}
    for p in parts or []:
        if isinstance(p, dict) and p.get("mountPoint"):
            start, end = template_mib(p.get("start")) or 0, template_mib(p.get("end"))
            out[str(p["mountPoint"])] = (p.get("fsType"), None if end is None else end - start)
    return out


def undo_steps(instruction: str) -> int:
    """How many edits an undo instruction takes back (one unless it says how many)."""
    m = _STEPS.search(instruction)
    if not m:
        return 1
    said = next(g for g in m.groups() if g).lower()
    count = {"twice": 2, "thrice": 3}.get(said) or (int(said) if said.isdigit() else number_value(said))
    return max(1, int(count or 1))


def undo_target(conv: Conversation, steps: int = 1) -> int | None:
    """The revision ``steps`` back in the *edit* history: an undo records itself as a new revision ("revert
    to revision N"), so a second undo must go back from N, not from the undo itself (which would redo)."""
    notes = {r.revision: r.note for r in conv.revisions}
    position = conv.current_revision
    for _ in range(steps):
        seen: set[int] = set()
        while position not in seen:
            seen.add(position)
            m = _REVERT_NOTE.match(notes.get(position, "") or "")
            if not m:
                break
            position = int(m.group(1))
        position -= 1
    return position if position >= 1 and (position in notes or not notes) else None


def _current_data(yaml_text: str | None) -> Any:
    return load_mapping(yaml_text).data if yaml_text else None


def _is_question(instruction: str, data: Any) -> bool:
    """An explanation question about the current template: answered from it, never sent to an LLM."""
    return isinstance(data, dict) and composer.is_explanation_question(instruction)


def unified_diff(old: str, new: str, old_rev: int, new_rev: int) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"revision {old_rev}", tofile=f"revision {new_rev}"))


class Drafter(Protocol):
    """What refinement uses of the agent (loop.Agent), which owns the providers, verification and saving."""

    engine: AgentServices
    settings: AISettings

    def clean_text(self, text: str | None, what: str, advice: str) -> str: ...

    async def provider(self, sampling: CallbackProvider | None) -> tuple[ChatProvider, list[str]]: ...

    def plans_with(self, provider: ChatProvider) -> bool: ...

    async def asks_client(self, sampling: CallbackProvider | None) -> bool: ...

    def known_packages(self) -> set[str]: ...

    def place_by_index(self, spec: RequestSpec, request: str, target: dict[str, Any] | None = None) -> None: ...

    def verify_draft(self, draft: Draft) -> dict[str, Any] | None: ...

    def save_draft(self, draft: Draft, save_as: str, overwrite: bool) -> str: ...


class Refiner:
    """The refinement half of the agent: it drafts with the agent's providers, verification and saving."""

    def __init__(self, agent: Drafter):
        self.agent = agent
        self.engine = agent.engine
        self.settings = agent.settings
        self._locks: weakref.WeakValueDictionary[tuple[int, str], anyio.Lock] = weakref.WeakValueDictionary()
        self._locks_guard = threading.Lock()

    async def refine(self, conversation_id: str, instruction: str, *, save_as: str | None = None,
                     overwrite: bool = False, sampling: CallbackProvider | None = None,
                     progress: Progress | None = None) -> AgentResult:
        """Refinements of one conversation run one at a time in this process (so none is lost); a revision
        written meanwhile by another process makes the refinement start again from the new revision."""
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
        instruction = self._clean_instruction(instruction)
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
        base = current  # the revision the edit applies to: the last one, or the one before a corrected edit
        correction = corrected_instruction(conv, instruction)
        if correction is not None:
            instruction, earlier = correction
            base = conv.revision(earlier)
        data = _current_data(base.yaml)
        if _is_question(instruction, data):
            answer = history_answer(conv) if _HISTORY.search(instruction) else summarize(data, instruction)
            await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", answer)
            report = await anyio.to_thread.run_sync(validate_text, current.yaml)
            errors, warnings = issues(report)
            return AgentResult(conv.id, current.revision, current.yaml, report.valid, errors, warnings, None,
                               grounded_on, "offline", 0, answer, mode="question", answer=answer)

        await report_progress(progress, 1, "applying the change")
        that = _THAT.search(instruction) if base is current else None
        # the pronoun's phrase is read here, the rest as any instruction ("remove that kernel argument" had been "no
        # argument", not understood)
        said = instruction[:that.start()] + " " * len(that.group(0)) + instruction[that.end():] if that else instruction
        spec = await anyio.to_thread.run_sync(self._understand_instruction, said, data)
        if that:
            that_of_last_edit(conv, that, spec)
        if spec.is_empty() and _BACK.search(instruction) and base is current:
            spec.add_packages = removed_by_last_edit(conv)
            spec.notes.append(f"read as what the last edit removed: {', '.join(spec.add_packages)}" if spec.add_packages
                              else "putting back not applied: the last edit removed no package")
        spec.last_partition = last_partition(conv) if base is current else None
        spec.earlier_disk = earlier_disk(conv, data)
        draft = await self._refine_draft(instruction, base.yaml, data, conv, sampling, progress, spec)
        if correction is not None:
            draft.notes.insert(0, f"read as a correction of the last edit: '{instruction}' applied to revision "
                                  f"{base.revision} instead")
        draft.notes += [f"unsupported: {u}" for u in spec.unsupported if f"unsupported: {u}" not in draft.notes]
        if isinstance(data, dict) and isinstance(draft.report.data, dict) and not spec.is_empty():
            target = draft.report.data.get("target") or {}
            draft.notes += [f"not applied: {m}" for m in untold(unmet(draft.report.data, want_from_spec(
                spec, str(target.get("dist") or "") or None, str(target.get("arch") or "") or None)),
                [*draft.notes, *draft.changes])]  # a change may say it already ("note: 8080/tcp not applied: ...")
        if isinstance(data, dict) and (draft.report.data == data or draft.yaml == current.yaml):
            # Nothing changed: no new revision; say why ("nothing to remove: cockpit is not in the package list")
            # and what was not understood.
            told = [n for n in (*draft.changes, *draft.notes) if n]
            summary = ("Nothing changed; no new revision (still revision "
                       f"{current.revision}). " + (" ".join(n[0].upper() + n[1:] + "." for n in told) if told else
                                                   f"Not understood: {instruction!r}."))
            await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
            report = await anyio.to_thread.run_sync(validate_text, current.yaml)
            errors, warnings = issues(report)
            return AgentResult(conv.id, current.revision, current.yaml, report.valid, errors, warnings, None,
                               grounded_on, draft.provider, draft.attempts, summary, mode="refine",
                               changes=[], notes=told or [f"not understood: {instruction}"],
                               unsupported=list(spec.unsupported))
        await report_progress(progress, 3, "verifying packages")
        packages = await anyio.to_thread.run_sync(self.agent.verify_draft, draft)
        revision = await anyio.to_thread.run_sync(
            lambda: store.add_revision(conv.id, draft.yaml, note=f"refined: {instruction[:200]}",
                                       valid=draft.report.valid, expected_revision=current.revision))
        diff = unified_diff(current.yaml, draft.yaml, current.revision, revision)
        changes = draft.changes or ([] if not diff else ["see diff"])
        # As a generation's: the verdict first, then what was not done, then the changes, a line each.
        lines = [f"Revision {revision}. {verdict(draft.report, packages)}",
                 *(n[0].upper() + n[1:].rstrip(".") + "." for n in draft.notes),
                 *(f"- {c}" for c in changes[:CHANGES_SHOWN])]
        if len(changes) > CHANGES_SHOWN:
            lines.append(f"- ... and {len(changes) - CHANGES_SHOWN} more")
        summary = "\n".join(lines if changes else [*lines, "- no change was needed"])
        await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
        saved = await anyio.to_thread.run_sync(self.agent.save_draft, draft, save_as, overwrite) if save_as else None
        errors, warnings = issues(draft.report)
        log.info("conversation %s: revision %d refined by %s", conv.id, revision, draft.provider)
        return AgentResult(conv.id, revision, draft.yaml, draft.report.valid, errors, warnings, packages,
                           grounded_on, draft.provider, draft.attempts, summary, mode="refine",
                           changes=changes, diff=diff, saved_to=saved, trace=draft.trace, notes=list(draft.notes),
                           unsupported=list(spec.unsupported))

    def _clean_instruction(self, instruction: str) -> str:
        return self.agent.clean_text(instruction, "instruction", "say what to change, e.g. 'add docker' or 'set the "
                                     "disk to 8GiB'")

    async def client_plan(self, conversation_id: str, instruction: str,
                          sampling: CallbackProvider | None) -> PlanAsk | None:
        """The edit-plan question :meth:`refine` would put to the MCP client's LLM, or None when it would not ask
        (undo/revert, a question, an edit the offline composer fully understood, no such conversation, another
        provider). Pure: nothing is recorded, saved or reverted."""
        if not await self.agent.asks_client(sampling):
            return None  # first: the rest (the offline edit and its validation) would run twice on every call
        try:
            instruction = self._clean_instruction(instruction)
            conv = await anyio.to_thread.run_sync(self.engine.conversations.get, conversation_id)
        except (AgentError, LookupError):
            return None
        current = conv.current
        if current is None or _REVERT.match(instruction):
            return None
        try:
            data = _current_data(current.yaml)
        except ValueError:
            return None  # the call reports the broken template
        if not isinstance(data, dict) or _is_question(instruction, data):
            return None
        spec = await anyio.to_thread.run_sync(self._understand_instruction, instruction, data)
        _offline, done = await self._offline_edit(instruction, data, spec)
        if done:
            return None
        return plan_ask(instruction, [], "edit_plan")

    def _understand_instruction(self, instruction: str, data: dict | None) -> RequestSpec:
        """The one parse of an edit instruction (packages of the current template and the library known)."""
        self.engine.ready()
        names = set(self.agent.known_packages())
        if isinstance(data, dict):
            names |= {str(p) for p in ((data.get("systemConfig") or {}).get("packages") or [])}
        from ..library.embed_local import english_words

        spec = parse_request(instruction, known_packages=names, english=english_words())
        spec.arch_named = bool(spec.arch)
        _users_removed_by_name(spec, data)
        target = data.get("target") if isinstance(data, dict) else None
        self.agent.place_by_index(spec, instruction, target if isinstance(target, dict) else None)
        return spec

    async def _refine_draft(self, instruction: str, current_yaml: str, data: dict | None, conv: Conversation,
                            sampling: CallbackProvider | None, progress: Progress | None,
                            spec: RequestSpec) -> Draft:
        offline, done = await self._offline_edit(instruction, data, spec)
        if done:
            assert offline is not None
            return offline
        provider, _skipped = await self.agent.provider(sampling)
        if provider.name == "offline":
            if offline is None:
                raise AgentError("the current template does not parse, and no LLM is available to repair it")
            return offline
        if offline is not None and isinstance(data, dict) and self.agent.plans_with(provider):
            return await self._planned_edit(provider, instruction, data, spec, offline)
        history = [(m.role, m.content) for m in conv.messages]
        messages = prompts.refinement_messages(current_yaml, instruction, history, self.settings.agent.prompt_style,
                                               data if isinstance(data, dict) else None)
        base = data if isinstance(data, dict) else {}
        try:
            draft = await llm_loop(provider, messages, base, progress, self.settings.agent)
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

    async def _offline_edit(self, instruction: str, data: dict | None, spec: RequestSpec) -> tuple[Draft | None, bool]:
        """The offline composer's edit (None when the template does not parse), and whether it is the answer:
        the composer's edits are exact, so they stand whenever it understood the whole instruction."""
        if not isinstance(data, dict):
            return None, False
        result = await anyio.to_thread.run_sync(
            lambda: composer.apply_instruction(data, instruction, spec=copy.deepcopy(spec)))
        report = await anyio.to_thread.run_sync(validate_text, result.yaml)
        offline = Draft(result.yaml, report, "offline", 1, result.notes(), result.changes)
        return offline, bool(result.changes and not result.unhandled and report.valid)

    async def _planned_edit(self, provider: ChatProvider, instruction: str, data: dict, spec: RequestSpec,
                            offline: Draft) -> Draft:
        """The edit plan from the model (schema-constrained), merged under the rules' reading, applied by the
        composer; the offline draft stands whenever the plan adds nothing or fails."""
        ask = plan_ask(instruction, [], "edit_plan")
        try:
            answer = await provider.complete_json(  # type: ignore[attr-defined]
                ask.messages, ask.schema, name=ask.name)
        except (LLMError, ValueError, TypeError) as exc:
            offline.notes.append(f"{provider.name} could not plan the edit ({exc}); used the offline understanding")
            return offline
        merged, taken = merge_specs(spec, answer, self.agent.known_packages(), load_capabilities())
        if not taken:
            return offline
        result = await anyio.to_thread.run_sync(
            lambda: composer.apply_instruction(data, instruction, spec=copy.deepcopy(merged)))
        report = await anyio.to_thread.run_sync(validate_text, result.yaml)
        if not report.valid and offline.report.valid:
            offline.notes.append(f"{provider.name}'s edit plan gave an invalid template; kept the offline edit")
            return offline
        notes = result.notes(skip={p for t in taken for p in t.split()})
        return Draft(result.yaml, report, f"{provider.name}+composer", 1,
                      [*notes, f"from {provider.name}'s plan: {', '.join(taken)}"], result.changes)

    async def _revert(self, conv: Conversation, match: re.Match[str], grounded_on: list[str]) -> AgentResult:
        store = self.engine.conversations
        instruction = match.string
        target_rev = int(match.group(1)) if match.group(1) else 1 if _ORIGINAL.search(instruction) else \
            undo_target(conv, undo_steps(instruction))
        if target_rev is None or (target_rev == conv.current_revision and not match.group(1)):
            steps = undo_steps(instruction)
            raise AgentError("there is no earlier revision to go back to" if steps == 1 else
                             f"there are fewer than {steps} edits to take back: say 'revert to revision N' "
                             "(N from 1, the first template)")
        old_yaml = conv.current_yaml or ""
        try:
            revision = await anyio.to_thread.run_sync(store.revert, conv.id, target_rev)
        except ValueError as exc:
            raise AgentError(str(exc)) from exc
        conv = await anyio.to_thread.run_sync(store.get, conv.id)
        new_yaml = conv.current_yaml or ""
        report = await anyio.to_thread.run_sync(validate_text, new_yaml)
        errors, warnings = issues(report)
        summary = f"Reverted to revision {target_rev}; it is now revision {revision}."
        await anyio.to_thread.run_sync(store.add_message, conv.id, "assistant", summary)
        return AgentResult(conv.id, revision, new_yaml, report.valid, errors, warnings, None, grounded_on,
                           "offline", 0, summary, mode="revert", changes=[f"reverted to revision {target_rev}"],
                           diff=unified_diff(old_yaml, new_yaml, revision - 1, revision))
