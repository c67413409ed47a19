"""Prompts for LLM generation, fixing and refinement.

Short and explicit so that small local models follow them too: the rules that
matter most for validity first, then the grounding examples, then the request.

Two styles (``ai.agent.prompt_style``):

* ``full``: every grounding template in full; the model answers with one complete template.
* ``compact`` (small local models, short context windows): the best example in full but without
  its metadata and comments, the others summarised in one line; the request's stated changes
  spelled out as a checklist; and the model answers with *only the sections it changes*. The agent
  completes the answer from the example (see ``server.repair.complete_from_base``). Measured with
  SmolLM2-135M (BENCHMARKS.md): a tiny model rarely writes a whole template that validates but
  often writes the one or two sections that matter; asking for less also makes it several times faster.
"""

from __future__ import annotations

import re

RULES = """\
Rules for an OS Image Composer template (YAML):
- Top-level keys: image {name, version}, target {os, dist, arch, imageType}, disk, systemConfig,
  optional packageRepositories and metadata. No other top-level keys.
- target.os/dist pairs: azure-linux/azl3, edge-microvisor-toolkit/emt3, wind-river-elxr/elxr12,
  ubuntu/ubuntu24, ubuntu/ubuntu26, debian/debian13, redhat-compatible-distro/el10.
- target.arch: x86_64 or aarch64. target.imageType: raw, iso or img.
- Sizes are strings like 4GiB or 512MiB. The last partition may grow to fill the disk with end: "0" (quoted).
- Partitions must not overlap; an EFI boot needs an ESP partition (type esp, fsType vfat or fat32).
- Use package names that exist in the target distribution; prefer names seen in the examples.
- Keep everything from the closest example that the request does not ask to change.
Answer with ONE complete YAML document inside a ```yaml fence and nothing else."""

SYSTEM = "You write OS Image Composer image templates. You answer with YAML only.\n\n" + RULES

# Small models lose track of long rule lists: only what most often breaks validity, and the answer format.
COMPACT_RULES = """\
Template sections: image (name, version), target (os, dist, arch, imageType), disk, systemConfig
(name, hostname, packages, kernel, bootloader, users).
- target.arch is x86_64 or aarch64; target.imageType is raw, iso or img.
- Sizes are strings like 8GiB. Quote versions: version: "1.0.0".
- Use the same keys and indentation as the example. Do not invent keys.
Answer with YAML only, in one ```yaml block: ONLY the top-level sections you change, each complete.
Sections you leave out are copied from the example unchanged."""

COMPACT_SYSTEM = "You edit OS Image Composer image templates (YAML). You answer with YAML only.\n\n" + COMPACT_RULES

STOP = ["\n```\n\n", "\n```\n#"]

_COMMENT = re.compile(r"^\s*#.*$\n?", re.MULTILINE)
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:")


def strip_comments(text: str) -> str:
    """Whole-line comments cost tokens and carry little for the model."""
    return _COMMENT.sub("", text).strip() + "\n"


def drop_section(text: str, key: str) -> str:
    """The YAML text without one top-level section (textually, so the rest keeps its exact layout)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        top = _TOP_KEY.match(line)
        if top:
            skipping = top.group(1) == key
        elif line.strip() and not line[:1].isspace() and not line.startswith(("-", "#")):
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out)


def elide_partitions(text: str, data: dict) -> str:
    """disk.partitions replaced by a one-line summary: a small model copying a partition table mangles
    UUIDs and offsets, and the agent restores the table from the example when the answer leaves it out."""
    parts = (data.get("disk") or {}).get("partitions") if isinstance(data.get("disk"), dict) else None
    if not isinstance(parts, list) or not parts:
        return text
    summary = ", ".join(f"{p.get('id')} ({p.get('mountPoint') or p.get('type')})" for p in parts if isinstance(p, dict))
    out: list[str] = []
    in_disk = skipping = False
    for line in text.splitlines(keepends=True):
        if line.strip() and not line[:1].isspace():
            in_disk = line.startswith("disk:")
            skipping = False
        elif skipping:
            if line.startswith(("    ", "  -")):
                continue
            skipping = False
        if in_disk and line.startswith("  partitions:"):
            out.append(f"  # partitions: {summary} (kept as they are unless the request changes them)\n")
            skipping = True
            continue
        out.append(line)
    return "".join(out)


def compact_example(text: str, data: dict | None = None) -> str:
    """The example as a small model needs it: no comments, no metadata (long prose it would copy badly),
    and with ``data``, the partition table summarised."""
    text = strip_comments(drop_section(text, "metadata"))
    return elide_partitions(text, data) if isinstance(data, dict) else text


def summarize_template(name: str, data: dict) -> str:
    target = data.get("target") or {}
    system = data.get("systemConfig") or {}
    packages = system.get("packages") or []
    return (f"- {name}: {target.get('os')}/{target.get('dist')} {target.get('arch')} {target.get('imageType')}; "
            f"packages: {', '.join(map(str, packages[:15]))}")


def _checklist(constraints: dict[str, str], hints: list[str] | None) -> str:
    items = [f"target.{k} = {v}" for k, v in constraints.items() if v]
    items += [h for h in hints or [] if h not in items]
    return "".join(f"\n- {item}" for item in items)


def generation_messages(request: str, constraints: dict[str, str], examples: list[tuple[str, str, dict]],
                        style: str = "full", hints: list[str] | None = None) -> list[tuple[str, str]]:
    """(role, content) pairs. ``examples`` are (name, yaml text, parsed data), best first.

    ``hints`` are the request's changes as the request parser understood them ("systemConfig.hostname =
    gw-7", "add packages: docker.io"): a checklist the model can follow literally.
    """
    if style == "compact":
        return _compact_generation(request, constraints, examples, hints)
    parts: list[str] = []
    for i, (name, text, _data) in enumerate(examples):
        parts.append(f"Example {i + 1} ({name}):\n```yaml\n{strip_comments(text)}```")
    user = "\n\n".join(parts)
    user += f"\n\nWrite a new template for this request: {request}"
    wanted = _checklist(constraints, hints)
    if wanted:
        user += f"\nRequired:{wanted}"
    user += "\nStart from the closest example. Reply with the YAML only."
    return [("system", SYSTEM), ("user", user)]


def _compact_generation(request: str, constraints: dict[str, str], examples: list[tuple[str, str, dict]],
                        hints: list[str] | None) -> list[tuple[str, str]]:
    name, text, data = examples[0]
    parts = [f"Example ({name}):\n```yaml\n{compact_example(text, data)}```"]
    if len(examples) > 1:
        parts.append("Other similar templates:\n" + "\n".join(summarize_template(n, d) for n, _t, d in examples[1:]))
    user = "\n\n".join(parts) + f"\n\nRequest: {request}"
    wanted = _checklist(constraints, hints)
    if wanted:
        user += f"\nChanges to make:{wanted}"
    user += "\nReply with only the changed sections of the example, as YAML."
    return [("system", COMPACT_SYSTEM), ("user", user)]


def fix_messages(previous: list[tuple[str, str]], reply: str, problems: str) -> list[tuple[str, str]]:
    return [*previous, ("assistant", reply),
            ("user", "That template is not valid. Problems:\n" + problems +
             "\nReturn the corrected COMPLETE template as one ```yaml block.")]


def compact_fix_messages(candidate_yaml: str, problems: str) -> list[tuple[str, str]]:
    """A fresh, short conversation: the whole template (the model's sections completed) and what is wrong.

    A small model does better on one focused question than at the end of a growing conversation, and it
    needs to see the complete document to fix a line in it.
    """
    user = (f"Fix these problems:\n{problems}\n\nin this template:\n```yaml\n{candidate_yaml}```\n\n"
            "Reply with only the corrected sections, as YAML.")
    return [("system", COMPACT_SYSTEM), ("user", user)]


def refinement_messages(current_yaml: str, instruction: str, history: list[tuple[str, str]],
                        style: str = "full", current_data: dict | None = None) -> list[tuple[str, str]]:
    if style == "compact":
        user = (f"Template:\n```yaml\n{compact_example(current_yaml, current_data)}```\n\n"
                f"Change request: {instruction}\n"
                "Reply with only the sections that change, as YAML.")
        return [("system", COMPACT_SYSTEM), ("user", user)]
    recent = "\n".join(f"{role}: {content[:300]}" for role, content in history[-6:])
    user = (f"Current template:\n```yaml\n{current_yaml}```\n\n"
            + (f"Conversation so far:\n{recent}\n\n" if recent else "")
            + f"Change request: {instruction}\n"
            "Apply only this change and keep everything else exactly as it is. Reply with the complete YAML only.")
    return [("system", SYSTEM), ("user", user)]


SPEC_SYSTEM = """\
You turn a request for an OS image into a JSON plan. Fill only what the request says; use null or [] for
everything it does not mention. Distributions: ubuntu24 (Ubuntu 24.04, noble), ubuntu26 (26.04), debian13
(trixie), el10 (RHEL/Rocky/Alma compatible), azl3 (Azure Linux 3, Mariner), emt3 (Edge Microvisor Toolkit),
elxr12 (Wind River eLxr 12). arch is x86_64 or aarch64 (arm64 means aarch64; amd64/x64 mean x86_64).
Packages are distribution package names (openssh-server, docker.io, nginx), never versions or prose.
Sizes look like 8GiB. Answer with the JSON object only."""


def spec_messages(request: str, schema: dict, examples: list[tuple[str, str, dict]]) -> list[tuple[str, str]]:
    """Messages asking for the request's plan as JSON (the schema is also sent as the response format)."""
    import json

    names = ", ".join(name for name, _text, _data in examples[:3])
    user = (f"Request: {request}\n\nClosest existing templates: {names or 'none'}.\n"
            f"JSON schema of the answer: {json.dumps(schema, separators=(',', ':'))}")
    return [("system", SPEC_SYSTEM), ("user", user)]
