"""The agent: retrieve → generate → validate → fix → verify → record (SPEC §4–5); refinement is refine.py.

Every template we hand back has been through the validator; ``valid`` is the
validator's verdict, never the model's. The offline composer is both a
provider of its own and the deterministic safety net under the LLM ones.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anyio

from ..composer import compose as composer
from ..composer import index_names
from ..composer.adherence import unmet, untold, want_from_spec
from ..composer.base import choose_base, named_in, strip_plan, unasked, unavailable_groups
from ..composer.request_parser import parse_request
from ..composer.request_spec import RequestSpec
from ..core.yamlsafe import load_mapping
from ..knowledge.loader import Capabilities, load_capabilities
from ..llm.chat import CallbackProvider, ChatProvider, LLMError, select_provider
from ..validation.validator import validate_text
from . import prompts
from .llm_draft import enforce, llm_loop, no_yaml_report, request_hints
from .refine import Refiner
from .results import CHANGES_SHOWN, AgentError, AgentResult, Draft, Progress, issues, report_progress, verdict
from .spec_plan import PlanAsk, merge_specs, parse_planned, plan_ask

if TYPE_CHECKING:
    from .services import AgentServices

log = logging.getLogger(__name__)

GROUNDING = 3
PLAIN_BASE_QUERY = "minimal base image"
PLAIN_CANDIDATES = 8  # the target's templates weighed as a plainer start than the request's search found


def newest_dist(family_id: str, groups: Iterable[str] = (), arch: str | None = None) -> str | None:
    """The newest supported release of an OS family (by its release number), e.g. ubuntu -> ubuntu26; with
    ``groups``, the newest of the releases that have the most of them (ubuntu with AI inference -> ubuntu24,
    whose archives have OpenVINO where ubuntu26's lack it)."""
    caps = load_capabilities()
    family = caps.families.get(family_id)
    if family is None or not family.dists:
        return None
    wanted = list(groups)

    def rank(dist: Any) -> tuple[int, tuple[int, ...]]:
        has = sum(caps.group_available(g, dist.id, arch) for g in wanted)
        return has, tuple(int(x) for x in re.findall(r"\d+", dist.release or dist.id))

    return max(family.dists.values(), key=rank).id


class Agent:
    def __init__(self, engine: AgentServices):
        self.engine = engine
        self.settings = engine.settings
        self._known_cache: tuple[tuple[int, int], set[str]] | None = None
        self._refiner = Refiner(self)

    def clean_text(self, text: str | None, what: str, advice: str) -> str:
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

    def plans_with(self, provider: ChatProvider) -> bool:
        """Plan mode: the model answers one structured question and the composer executes it."""
        return (provider.name != "offline" and self.settings.agent.llm_mode == "plan"
                and callable(getattr(provider, "complete_json", None)))

    async def asks_client(self, sampling: CallbackProvider | None) -> bool:
        """This call would put its plan question to the MCP client's LLM (``sampling``).

        Asked before every generate and refine call (the MCP layer's resolver), so it decides without probing
        Ollama or OpenAI whenever the answer is known without them: the client cannot be asked, plan mode is
        off, or another provider is configured by name."""
        if (sampling is None or self.settings.agent.llm_mode != "plan"
                or self.settings.provider not in ("auto", "sampling") or not (await sampling.available())[0]):
            return False
        try:
            provider, _skipped = await self.provider(sampling)
        except LLMError:
            return False
        return provider is sampling and self.plans_with(provider)

    def _clean_request(self, request: str) -> str:
        return self.clean_text(request, "request", "describe the image, e.g. 'minimal ubuntu 24.04 edge image "
                               "with docker'")

    async def client_plan(self, request: str, constraints: dict[str, str | None],
                          sampling: CallbackProvider | None) -> PlanAsk | None:
        """The plan question :meth:`generate` would put to the MCP client's LLM, or None when it would not ask
        it. Pure (nothing is recorded or saved): the MCP layer asks the question before the call, and the
        same understanding and grounding make the call ask exactly this."""
        try:
            request = self._clean_request(request)
        except AgentError:
            return None
        if not await self.asks_client(sampling):
            return None
        try:
            spec = await anyio.to_thread.run_sync(self.understand, request, constraints)
            grounding = await anyio.to_thread.run_sync(self.ground, request, spec)
        except AgentError:
            return None  # the call reports it
        return plan_ask(request, grounding, "request_spec")

    # ---- generation ----------------------------------------------------------
    async def generate(self, request: str, *, conversation_id: str | None = None, os: str | None = None,
                       dist: str | None = None, arch: str | None = None, image_type: str | None = None,
                       save_as: str | None = None, overwrite: bool = False,
                       sampling: CallbackProvider | None = None, progress: Progress | None = None) -> AgentResult:
        request = self._clean_request(request)
        if save_as:
            self.engine.check_save_name(save_as, overwrite)
        await report_progress(progress, 0, "understanding the request and retrieving grounding templates")
        constraints = {"os": os, "dist": dist, "arch": arch, "imageType": image_type}
        spec = await anyio.to_thread.run_sync(self.understand, request, constraints)
        grounding = await anyio.to_thread.run_sync(self.ground, request, spec)
        provider, skipped = await self.provider(sampling)
        await report_progress(progress, 1, f"generating with {provider.name}")
        offline_draft = await anyio.to_thread.run_sync(self._compose, request, grounding, spec)
        if provider.name == "offline":
            draft = offline_draft
        elif self.plans_with(provider):
            draft = await self._planned(provider, request, spec, grounding, offline_draft)
        else:
            try:
                draft = await self._llm_generate(provider, request, constraints, grounding, progress, spec)
            except LLMError as exc:
                if self.settings.provider != "auto":
                    raise
                # auto mode promised "the best available": the deterministic composer still is.
                draft = Draft("", no_yaml_report(), provider.name, 1, [f"{provider.name} failed ({exc})"],
                               fallback=True)
            draft = await anyio.to_thread.run_sync(enforce, draft, spec, offline_draft)
        draft.notes += self._honesty_notes(draft, spec, arch_named=bool(arch or spec.arch_named))
        await report_progress(progress, 3, "verifying packages")
        packages = await anyio.to_thread.run_sync(self.verify_draft, draft)
        grounded_on = [name for name, _text, _data in grounding]
        conv_id, revision = await anyio.to_thread.run_sync(
            self._record_new, conversation_id, request, draft, grounded_on)
        saved = await anyio.to_thread.run_sync(self.save_draft, draft, save_as, overwrite) if save_as else None
        await report_progress(progress, 4, "done")
        errors, warnings = issues(draft.report)
        return AgentResult(
            conversation_id=conv_id, revision=revision, yaml=draft.yaml, valid=draft.report.valid, errors=errors,
            warnings=warnings, packages=packages, grounded_on=grounded_on, provider=draft.provider,
            attempts=draft.attempts, explanation=self._explain_generation(draft, grounding, packages, spec),
            changes=draft.changes, saved_to=saved, skipped_providers=skipped, trace=draft.trace,
            notes=list(draft.notes), unsupported=list(spec.unsupported), plan=draft.plan)

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
        from ..library.embed_local import english_words

        spec = parse_request(text, known_packages=self.known_packages(), english=english_words())
        spec.is_question = False
        given = constraints or {}
        spec.arch_named = bool(spec.arch)
        said = spec.dist or spec.os  # what the words named, before the arguments
        if given.get("os"):
            spec.os = caps.family_of(given["os"]) or given["os"]
        if given_dist := given.get("dist"):
            dist = caps.dist_of(given_dist)
            if dist is None:  # "ubuntu22": read as a request would be, so it is named unsupported with the closest
                as_words = parse_request(given_dist)
                dist = as_words.dist
                spec.unsupported += [u for u in as_words.unsupported if u not in spec.unsupported]
            spec.dist = dist or given_dist
            spec.os = caps.family_of(spec.dist) or spec.os
        taken = spec.dist or spec.os
        if said and taken and said != taken and caps.family_of(said) != caps.family_of(taken) or (
                said in caps.dists and taken in caps.dists and said != taken):
            spec.notes.append(f"the request names {said}; the {'dist' if given.get('dist') else 'os'} argument "
                              f"asks for {taken}, which was used")
        if not said and not taken:
            spec.notes.append(self._unnamed_distribution(spec, caps))
        if given.get("arch"):
            spec.arch = caps.arch_of(given["arch"]) or given["arch"]
            spec.arch_named = True
        if given.get("imageType"):
            spec.image_type = given["imageType"]
        if spec.os and not spec.dist:
            spec.dist = newest_dist(spec.os, spec.add_groups, spec.arch)
            newest = newest_dist(spec.os)
            family = caps.families.get(spec.os)
            if family and len(family.dists) > 1 and spec.dist:
                if spec.dist == newest or newest is None:
                    spec.notes.append(f"no release named: using the newest supported, {caps.dists[spec.dist].label}")
                else:
                    lacking = [g for g in spec.add_groups if caps.group_available(g, spec.dist, spec.arch)
                               and not caps.group_available(g, newest, spec.arch)]
                    spec.notes.append(f"no release named: using {caps.dists[spec.dist].label}, the newest supported "
                                      f"release with {', '.join(lacking)} ({caps.dists[newest].label} lacks it)")
        if not spec.arch:
            spec.arch = "x86_64"  # the default target; the explanation says so
        self._hypervisor_format(spec, caps)
        self.place_by_index(spec, text)
        return spec

    @staticmethod
    def _hypervisor_format(spec: RequestSpec, caps: Capabilities) -> None:
        """A new image for a hypervisor ("a VM for VMware ESXi") writes that hypervisor's disk format beside the raw
        disk, unless the request names formats of its own (a group's ``disk_format``), the raw one included: "a
        raw disk image for qemu" is raw only."""
        if spec.image_type is not None or spec.hardware or spec.artifacts:
            return
        for group in spec.add_groups:
            info = caps.groups.get(group)
            if info and info.disk_format:
                kind, hypervisor = info.disk_format
                spec.artifacts.append(kind)
                spec.notes.append(f"a {kind} disk is written, {hypervisor}'s format (name another format, or "
                                  f"'raw only', to change it)")
                return

    def place_by_index(self, spec: RequestSpec, request: str, target: dict[str, Any] | None = None) -> None:
        """Words the rules could not place that the repository index of the target (the spec's, else ``target``:
        an edited template's) knows are packages after all, as written or by the distributions' naming
        conventions (server/composer/index_names.py). Uses the package verifier, so its settings decide whether
        indexes are downloaded or only read from the cache; without an index the words stay reported as not
        understood, with how to add them unchecked."""
        candidates = index_names.readings(spec, request)
        given = target or {}
        dist, os_, arch = (spec.dist or given.get("dist"), spec.os or given.get("os"),
                           spec.arch or given.get("arch"))
        if not candidates or not dist:
            return
        from ..library.embed_local import english_words  # the model's vocabulary; numpy is loaded by then

        why = f"the {dist} repository index could not be read"
        if not self.settings.agent.verify_packages:
            why = "package checks are off (ai.agent.verify_packages)"
        else:
            try:
                result = self.engine.verify_packages(list(candidates), os=os_, dist=str(dist), arch=arch)
            except (ValueError, RuntimeError, OSError) as exc:
                log.debug("index check of %s skipped: %s", list(candidates), exc)
            else:
                index_names.place(spec, set(result.found), candidates)
                if result.complete:
                    return
        index_names.unchecked(spec, candidates, why, english_words(), request)

    def _honesty_notes(self, draft: Draft, spec: RequestSpec, *, arch_named: bool) -> list[str]:
        """What the answer must say: unsupported targets, defaults chosen, stated facts that did not land."""
        notes = [f"unsupported: {u}" for u in spec.unsupported]
        # What the reading itself adjusted or could not apply ("cuda not applied: ...", "password not stored"):
        # in the changes as "note: ...", and here with every other wish left undone.
        notes += [n for n in spec.notes if n not in draft.notes]
        # What the edit itself found it could not write ("autologin not applied: ...", told once the image's
        # groups are known): a note among the changes, and here.
        notes += [c[6:] for c in draft.changes
                  if c.startswith("note: ") and " not applied" in c and c[6:] not in notes and c[6:] not in draft.notes]
        if not arch_named:
            notes.append("no architecture named: built for x86_64")
        if spec.corrected:
            notes.append("read as: " + ", ".join(spec.corrected))
        if isinstance(draft.report.data, dict):
            target = draft.report.data.get("target") or {}
            missed = unmet(draft.report.data, want_from_spec(spec, str(target.get("dist") or "") or None,
                                                             str(target.get("arch") or "") or None))
            notes += [f"not applied: {m}" for m in untold(missed, [*draft.notes, *notes])]
        return notes

    async def _planned(self, provider: ChatProvider, request: str, spec: RequestSpec,
                       grounding: list[tuple[str, str, dict]], offline: Draft) -> Draft:
        """The LLM plans (a RequestSpec as schema-constrained JSON), the rules' facts win, the composer executes.
        Whatever goes wrong on the model's side, the offline draft stands."""
        ask = plan_ask(request, grounding, "request_spec")
        try:
            answer = await provider.complete_json(  # type: ignore[attr-defined]
                ask.messages, ask.schema, name=ask.name)
        except (LLMError, ValueError, TypeError) as exc:
            offline.notes.append(f"{provider.name} could not plan ({exc}); used the offline understanding")
            offline.provider = f"{provider.name}+offline"
            return offline
        try:
            offline.plan = parse_planned(answer)
        except ValueError:
            offline.plan = None
        merged, taken = merge_specs(spec, answer, self.known_packages(), load_capabilities())
        if not taken:
            offline.provider = f"{provider.name}+offline"
            offline.notes.append(f"{provider.name}'s plan added nothing to the offline understanding")
            return offline
        draft = await anyio.to_thread.run_sync(self._compose, request, grounding, merged)
        draft.provider = f"{provider.name}+composer"
        draft.plan = offline.plan
        draft.notes.append(f"from {provider.name}'s plan: {', '.join(taken)}")
        if not draft.report.valid and offline.report.valid:
            offline.notes.append(f"{provider.name}'s plan gave an invalid template; kept the offline one")
            return offline
        return draft

    def _grounding(self, request: str, os: str | None, dist: str | None, arch: str | None,
                   image_type: str | None) -> list[tuple[str, str, dict]]:
        self.engine.ready()
        searcher, index = self.engine.searcher, self.engine.index
        assert searcher is not None and index is not None
        self.engine.refresh()
        records: list[Any] = []
        # Exact filters first; relaxed ones top the list up to GROUNDING examples (the base is then chosen by
        # compose_base.choose_base, which puts templates of the requested target first).
        for filters in ({"os": os, "dist": dist, "arch": arch, "image_type": image_type},
                        {"os": os, "dist": dist, "arch": None, "image_type": None},
                        {"os": None, "dist": None, "arch": None, "image_type": None}):
            known = {k: v for k, v in filters.items() if v and v in index.known_values(k)}
            if any(filters.values()) and len(known) != len([v for v in filters.values() if v]):
                continue
            outcome = searcher.search(request, GROUNDING, use_threshold=False, **filters)
            seen = {r.name for r in records}
            records += [r.record for r in outcome.results if r.record.name not in seen]
            if len(records) >= GROUNDING:
                break
        return self._read(records[:GROUNDING])

    def _plain_base(self, request: str, spec: RequestSpec, grounding: list[tuple[str, str, dict]]
                    ) -> list[tuple[str, str, dict]]:
        """The target's template that carries the least the request did not ask for, when that is less than
        every grounding template carries: a request search ranks by likeness, and "a server for data crunching"
        reads like a purpose-built monitoring template whose Prometheus and Grafana nobody asked for. The
        target's plainest templates come first in a search for a minimal base; PLAIN_CANDIDATES of them are
        weighed, or only the first, carrying nothing unasked, when the request names what a grounding template
        is for ("an edge gateway": that one is the start, whatever else it has). With no release named, any
        family's plainest templates are weighed, those that can have every asked group first ("a home NAS with
        samba" had started from a monitoring template whose PCP and Cockpit nobody asked for)."""
        searcher, index = self.engine.searcher, self.engine.index
        assert searcher is not None and index is not None
        exact = {"os": spec.os, "dist": spec.dist, "arch": spec.arch, "image_type": spec.image_type or "raw"}
        if not all(v in index.known_values(k) for k, v in exact.items() if v):
            return []
        caps = load_capabilities()
        weights = [unasked(name, data, spec, caps, request) for name, _t, data in grounding]
        if weights and min(weights) == 0:
            return []
        named = any(named_in(name, request, caps) for name, _t, _d in grounding)
        have = {name for name, _t, _d in grounding}
        found = searcher.search(PLAIN_BASE_QUERY, 1 if named else PLAIN_CANDIDATES, use_threshold=False, **exact)
        plain = [(unavailable_groups(spec, p[2].get("target") or {}, caps), unasked(p[0], p[2], spec, caps, request), i, p)
                 for i, p in enumerate(self._read([r.record for r in found.results if r.record.name not in have]))]
        if not plain:
            return []
        _lacking, weight, _i, best = min(plain)
        return [best] if weight == 0 or not named and (not weights or weight < min(weights)) else []

    def _read(self, records: list[Any]) -> list[tuple[str, str, dict]]:
        index = self.engine.index
        assert index is not None
        out: list[tuple[str, str, dict]] = []
        for record in records:
            try:
                text = index.read_text(record)
                out.append((record.name, text, load_mapping(text).data))
            except (OSError, ValueError) as exc:  # YamlError is a ValueError
                log.warning("grounding template %s unreadable: %s", record.name, exc)
        return out

    @staticmethod
    def _unnamed_distribution(spec: RequestSpec, caps: Capabilities) -> str:
        """The note for a request that names no distribution, with the one release that packages what it asks
        for when only one does (ROS 2 Jazzy: Ubuntu 24.04; grounding then prefers a template of it)."""
        asked = [g for g in spec.add_groups if g in caps.groups]
        able = [d for d in caps.dists if asked and all(caps.group_available(g, d, spec.arch) for g in asked)]
        if len(able) == 1:
            what = ", ".join(caps.groups[g].description for g in asked)
            return f"no distribution named; {what}: packaged for {caps.dists[able[0]].label} only"
        return "no distribution named: built on the closest template's (say one, e.g. 'ubuntu 24.04')"

    def _able_base(self, request: str, spec: RequestSpec, grounding: list[tuple[str, str, dict]]
                   ) -> list[tuple[str, str, dict]]:
        """With no distribution named, the best-ranked template whose target can have every asked group, when
        none of the grounding's can ("digital signage" reads like an EMT video template; only Debian has the
        kiosk): choose_base then prefers it."""
        caps = load_capabilities()
        if spec.os or spec.dist or not any(g in caps.groups for g in spec.add_groups) or any(
                not unavailable_groups(spec, d.get("target") or {}, caps) for _n, _t, d in grounding):
            return []
        searcher = self.engine.searcher
        assert searcher is not None
        have = {name for name, _t, _d in grounding}
        outcome = searcher.search(request, 50, use_threshold=False, arch=spec.arch, image_type=spec.image_type)
        found = [r.record for r in outcome.results if r.record.name not in have and not unavailable_groups(
            spec, {"dist": r.record.dist, "os": r.record.os, "arch": r.record.arch}, caps)]
        return self._read(found[:1])

    def ground(self, request: str, spec: RequestSpec) -> list[tuple[str, str, dict]]:
        """The templates a spec is grounded on, the composer's base first."""
        grounding = self._grounding(request, spec.os, spec.dist, spec.arch, spec.image_type or "raw")
        grounding += self._plain_base(request, spec, grounding)
        grounding += self._able_base(request, spec, grounding)
        if not grounding:
            raise AgentError("no templates are indexed to ground generation on; check OIC_AI_TEMPLATES_DIR")
        return choose_base(grounding, spec, load_capabilities(), request)[:GROUNDING]

    def compose_spec(self, request: str, spec: RequestSpec) -> Draft:
        """What the offline composer makes of ``spec`` alone, on its own grounding (the LLM bench judges a
        model's plan this way, by the same adherence check as the merged result)."""
        return self._compose(request, self.ground(request, spec), spec)

    def _compose(self, request: str, grounding: list[tuple[str, str, dict]], spec: RequestSpec) -> Draft:
        caps = load_capabilities()
        name, _text, base = grounding[0]
        strip = strip_plan(name, base, spec, request, caps)
        result = composer.compose(request, base, base_file=name, spec=copy.deepcopy(spec), strip_groups=strip)
        report = validate_text(result.yaml)
        notes = result.notes()
        return Draft(result.yaml, report, "offline", 1, notes, result.changes)

    async def _llm_generate(self, provider: ChatProvider, request: str, constraints: dict[str, str | None],
                            grounding: list[tuple[str, str, dict]], progress: Progress | None,
                            spec: RequestSpec) -> Draft:
        style = self.settings.agent.prompt_style
        messages = prompts.generation_messages(request, {k: v for k, v in constraints.items() if v},
                                               grounding, style, hints=request_hints(spec, constraints))
        return await llm_loop(provider, messages, grounding[0][2], progress, self.settings.agent)
    def verify_draft(self, draft: Draft) -> dict[str, Any] | None:
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

    def _record_new(self, conversation_id: str | None, request: str, draft: Draft,
                    grounded_on: list[str]) -> tuple[str, int]:
        store = self.engine.conversations
        conv = store.create(conversation_id, metadata={"grounded_on": grounded_on, "provider": draft.provider})
        revision = store.add_revision(conv.id, draft.yaml, note=f"generated: {request[:200]}",
                                      valid=draft.report.valid)
        if revision > 1:  # a conversation that had a template: this one replaces it, and the answer says so
            draft.notes.insert(0, f"conversation {conv.id} already held a template (revision {revision - 1}): this new "
                                  f"one replaces it as revision {revision} (refine_template changes a template; "
                                  f"'revert to revision {revision - 1}' brings the old one back)")
        store.add_message(conv.id, "user", request)
        store.add_message(conv.id, "assistant", f"revision {revision} ({'valid' if draft.report.valid else 'invalid'})")
        log.info("conversation %s: revision %d generated by %s", conv.id, revision, draft.provider)
        return conv.id, revision

    def save_draft(self, draft: Draft, save_as: str, overwrite: bool) -> str:
        if not draft.report.valid:
            raise AgentError("not saved: the template is invalid; fix the errors first or refine it")
        return str(self.engine.save_template(draft.yaml, save_as, overwrite))

    def _explain_generation(self, draft: Draft, grounding: list[tuple[str, str, dict]],
                            packages: dict[str, Any] | None, spec: RequestSpec | None = None) -> str:
        data = draft.report.data or {}
        target = data.get("target") or {}
        name = (data.get("image") or {}).get("name", "template")
        # What matters first: what was made and whether it holds; then, a line each, what was not done or not
        # understood; then what changed, a line each (a chat client shows the head, a model reads it first).
        lines = [f"Generated '{name}' for {target.get('os')}/{target.get('dist')} {target.get('arch')} "
                 f"{target.get('imageType')} with the {draft.provider} provider. {verdict(draft.report, packages)}"]
        notes = [n for n in draft.notes if n]
        lines.extend(n[0].upper() + n[1:].rstrip(".") + "." for n in notes)
        told = {f"note: {n}" for n in notes}  # a note of the reading is a change too ("note: ..."): said once, above
        changes = [c for c in draft.changes if c not in told]
        shown = changes[:CHANGES_SHOWN]
        grounded = ", ".join(n for n, _t, _d in grounding)
        if shown:
            lines.append(f"Changes (grounded on {grounded}):")
            lines.extend(f"- {c}" for c in shown)
            if len(changes) > len(shown):
                lines.append(f"- ... and {len(changes) - len(shown)} more")
        else:
            lines.append(f"Grounded on {grounded}.")
        return "\n".join(lines)

    # ---- refinement (refine.py) ------------------------------------------------
    async def refine(self, conversation_id: str, instruction: str, *, save_as: str | None = None,
                     overwrite: bool = False, sampling: CallbackProvider | None = None,
                     progress: Progress | None = None) -> AgentResult:
        """Apply an instruction to a conversation's template (a new revision), answer a question about it, or
        go back to an earlier revision."""
        return await self._refiner.refine(conversation_id, instruction, save_as=save_as, overwrite=overwrite,
                                          sampling=sampling, progress=progress)

    async def client_edit_plan(self, conversation_id: str, instruction: str,
                               sampling: CallbackProvider | None) -> PlanAsk | None:
        """The edit-plan question :meth:`refine` would put to the MCP client's LLM, or None (pure)."""
        return await self._refiner.client_plan(conversation_id, instruction, sampling)
