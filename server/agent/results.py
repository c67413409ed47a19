"""What the agent works on and hands back: a draft, the result of a turn, the error it raises, the verdict.

Shared by generation (loop.py), the LLM drafting loop (llm_draft.py) and refinement (refine.py).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..validation.report import ValidationReport
from .planned_spec import PlannedSpec

log = logging.getLogger(__name__)

Progress = Callable[[float, float, str], Awaitable[None]]


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
    plan: PlannedSpec | None = None  # plan mode: the model's spec as it answered, before the merge




@dataclass
class Draft:
    yaml: str
    report: ValidationReport
    provider: str
    attempts: int
    notes: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    # The LLM path failed: the caller should use the offline composer's draft instead (typed, not a note).
    fallback: bool = False
    plan: PlannedSpec | None = None  # plan mode: the model's answer, kept whether or not the merge took from it


def issues(report: ValidationReport) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [i.to_dict() for i in report.errors], [i.to_dict() for i in report.warnings]


CHANGES_SHOWN = 20  # changes listed in an answer's explanation; all of them are in its ``changes``


def verdict(report: ValidationReport, packages: dict[str, Any] | None) -> str:
    """The closing sentence of an answer: the validator's verdict and what package verification found."""
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



async def report_progress(progress: Progress | None, step: float, message: str) -> None:
    if progress is not None:
        try:
            await progress(step, 4, message)
        except Exception:  # noqa: BLE001 - progress is best effort; never fail the call for it
            log.debug("progress report failed", exc_info=True)

