"""The LLM's plan for a request: a JSON schema for it, and the merge with the deterministic parse.

An LLM (schema-constrained, see ``ChatProvider.complete_json``) answers with a :class:`PlannedSpec`. Its
structure is guaranteed, its meaning is not (a 135M model puts version strings into package lists and
picks the wrong arch), so the merge is conservative:

* facts the rules read exactly win: target words, sizes, hostnames, kernel parameters, package names
  the parser placed;
* the model fills only what the rules left unset: the target when the text named none, a disk size,
  a hostname (never the architecture or "minimal", which only swap the base for a guess);
* every package the model adds is checked against the known-package sources (the repository index when
  the caller has one, every indexed template, the capability knowledge) and dropped otherwise.

So the merged result is never worse than the offline parse alone: it can only add checked facts.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..composer.request_spec import RequestSpec
from ..knowledge.loader import Capabilities
from ..knowledge.request_words import load_request_words
from ..knowledge.sizes import CASUAL_SIZE, casual_mib, fmt_size
from ..llm.chat import ChatMessage
from ..validation.system_rules import is_hostname
from . import prompts
from .planned_spec import PlannedSpec

_NAME = re.compile(r"[a-z0-9][a-z0-9+_.-]*")
_KERNEL_PARAM = re.compile(r"[A-Za-z0-9_.-]+(?:=\S+)?")


def spec_schema() -> dict[str, Any]:
    """JSON schema for :class:`PlannedSpec` in the strict form every back-end accepts (see strict_json_schema)."""
    from ..llm.chat import strict_json_schema

    return strict_json_schema(PlannedSpec)


def parse_planned(answer: Any) -> PlannedSpec:
    """The model's answer as a PlannedSpec; ValueError says what was wrong (for a retry)."""
    if not isinstance(answer, dict):
        raise ValueError("the plan is not a JSON object")
    filled = {k: answer.get(k) for k in PlannedSpec.model_fields}
    for key in ("add_packages", "remove_packages", "kernel_cmdline_append"):
        filled[key] = [str(v) for v in filled[key] or [] if isinstance(v, str | int)]
    filled["minimal"] = bool(filled.get("minimal"))
    try:
        return PlannedSpec.model_validate(filled)
    except ValidationError as exc:
        raise ValueError(f"the plan does not match the schema: {exc.errors()[:3]}") from None


def spec_from_plan(plan: PlannedSpec, caps: Capabilities) -> RequestSpec:
    """The model's plan on its own, as the composer reads a spec: names put in their canonical form and
    malformed values (a hostname with spaces, a size under 1 GiB, a package name with blanks) dropped, but
    nothing checked against known packages and the architecture taken as the model said. The merge below
    takes from this what the rules left open; the LLM bench composes it alone to judge the model's spec.

    Every free-text value must have the shape of what it names (a package name, an RFC 1123 host name, a
    kernel parameter, a size); a placeholder for "not given" ("null", "none", "n/a"...) is no value."""
    dist = caps.dist_of(_given(plan.dist))
    size = None
    disk_size = _given(plan.disk_size)
    if disk_size:
        m = re.fullmatch(CASUAL_SIZE, disk_size, re.I)
        mib = casual_mib(m.group(1), m.group(2)) if m else None
        size = fmt_size(mib) if mib and mib >= 1024 else None
    return RequestSpec(
        os=caps.family_of(dist) if dist else caps.family_of(_given(plan.os)), dist=dist,
        arch=caps.arch_of(_given(plan.arch)),
        image_type=plan.image_type if plan.image_type in ("raw", "iso", "img") else None,
        add_packages=_names(plan.add_packages), remove_packages=_names(plan.remove_packages), disk_size=size,
        hostname=_shaped(plan.hostname, is_hostname),
        kernel_cmdline_append=_unique(_shaped(p, _KERNEL_PARAM.fullmatch)
                                      for entry in plan.kernel_cmdline_append for p in entry.split()),
        minimal=plan.minimal)


def _given(value: str | None) -> str | None:
    """The value, trimmed, or None when it is empty or a placeholder for "not given"."""
    text = (value or "").strip().strip("\"'`").strip()
    if not text or text.lower() in load_request_words().placeholders:
        return None
    return text


def _shaped(value: str | None, shape: Callable[[str], object]) -> str | None:
    text = _given(value)
    return text if text is not None and shape(text) else None


def _unique(values: Iterable[str | None]) -> list[str]:
    out: list[str] = []
    for value in values:
        if value is not None and value not in out:
            out.append(value)
    return out


def _names(values: list[str]) -> list[str]:
    return _unique(_shaped(v.lower() if v else v, _NAME.fullmatch) for v in values)


def merge_specs(rules: RequestSpec, answer: Any, known: Iterable[str],
                caps: Capabilities) -> tuple[RequestSpec, list[str]]:
    """The rules' spec with what the model adds that the rules left open; returns (merged, what was taken)."""
    try:
        plan = spec_from_plan(parse_planned(answer), caps)
    except ValueError:
        return rules, []
    merged = copy.deepcopy(rules)
    taken: list[str] = []
    names = {n.lower() for n in known} | {n.lower() for n in caps.known_packages()}
    if not merged.dist and plan.dist:
        merged.dist = plan.dist
        merged.os = caps.family_of(merged.dist)
        taken.append(f"distribution {merged.dist}")
    # The architecture is never taken from the model: a word in the text would have been read by the rules,
    # and without one the documented default (x86_64) is right more often than a small model's guess.
    if not merged.image_type and plan.image_type:
        merged.image_type = plan.image_type
        taken.append(f"image type {plan.image_type}")
    if not (merged.disk_size or merged.disk_size_delta) and plan.disk_size:
        merged.disk_size = plan.disk_size
        taken.append(f"disk size {merged.disk_size}")
    if not merged.hostname and plan.hostname:
        merged.hostname = plan.hostname
        taken.append(f"hostname {plan.hostname}")
    placed = {p.lower() for p in [*merged.add_packages, *merged.remove_packages]}
    for low in plan.add_packages:
        if low in names and low not in placed:
            merged.add_packages.append(low)
            placed.add(low)
            merged.unparsed = [u for u in merged.unparsed if u.lower() != low]
            taken.append(f"package {low}")
    for low in plan.remove_packages:
        if low in names and low not in placed:
            merged.remove_packages.append(low)
            placed.add(low)
            taken.append(f"removal of {low}")
    # Nor is "minimal": the rules read the word, and a model's guess swaps the request's base for a bare one,
    # losing what it carried (the LLM bench: an elxr cloud image lost its qemu-guest-agent).
    return merged, taken


__all__ = ["merge_specs", "parse_planned", "spec_from_plan", "spec_schema"]


@dataclass(frozen=True)
class PlanAsk:
    """The one structured question plan mode puts to a model: the plan of a request or of an edit."""

    messages: list[ChatMessage]
    schema: dict[str, Any]
    name: str  # request_spec | edit_plan


def plan_ask(text: str, grounding: list[tuple[str, str, dict]], name: str) -> PlanAsk:
    """The plan question for ``text``, grounded on the templates it will be composed from (none for an edit)."""
    schema = spec_schema()
    return PlanAsk([ChatMessage(r, c) for r, c in prompts.spec_messages(text, schema, grounding)], schema, name)
