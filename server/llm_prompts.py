"""Prompts for LLM generation, fixing and refinement.

Short and explicit so that small local models follow them too: the rules that
matter most for validity first, then the grounding examples (one in full,
the rest either in full or summarised, by ``style``), then the request.
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

STOP = ["\n```\n\n", "\n```\n#"]

_COMMENT = re.compile(r"^\s*#.*$\n?", re.MULTILINE)


def strip_comments(text: str) -> str:
    """Whole-line comments cost tokens and carry little for the model."""
    return _COMMENT.sub("", text).strip() + "\n"


def summarize_template(name: str, data: dict) -> str:
    target = data.get("target") or {}
    system = data.get("systemConfig") or {}
    packages = system.get("packages") or []
    return (f"- {name}: {target.get('os')}/{target.get('dist')} {target.get('arch')} {target.get('imageType')}; "
            f"packages: {', '.join(map(str, packages[:15]))}")


def generation_messages(request: str, constraints: dict[str, str], examples: list[tuple[str, str, dict]],
                        style: str = "full") -> list[tuple[str, str]]:
    """(role, content) pairs. ``examples`` are (name, yaml text, parsed data), best first."""
    parts: list[str] = []
    for i, (name, text, data) in enumerate(examples):
        if i == 0 or style == "full":
            parts.append(f"Example {i + 1} ({name}):\n```yaml\n{strip_comments(text)}```")
        else:
            parts.append("Other similar templates:\n" + summarize_template(name, data))
    wanted = "; ".join(f"{k} = {v}" for k, v in constraints.items() if v)
    user = "\n\n".join(parts)
    user += f"\n\nWrite a new template for this request: {request}"
    if wanted:
        user += f"\nRequired: {wanted}."
    user += "\nStart from the closest example. Reply with the YAML only."
    return [("system", SYSTEM), ("user", user)]


def fix_messages(previous: list[tuple[str, str]], reply: str, problems: str) -> list[tuple[str, str]]:
    return [*previous, ("assistant", reply),
            ("user", "That template is not valid. Problems:\n" + problems +
             "\nReturn the corrected COMPLETE template as one ```yaml block.")]


def refinement_messages(current_yaml: str, instruction: str, history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    recent = "\n".join(f"{role}: {content[:300]}" for role, content in history[-6:])
    user = (f"Current template:\n```yaml\n{current_yaml}```\n\n"
            + (f"Conversation so far:\n{recent}\n\n" if recent else "")
            + f"Change request: {instruction}\n"
            "Apply only this change and keep everything else exactly as it is. Reply with the complete YAML only.")
    return [("system", SYSTEM), ("user", user)]
