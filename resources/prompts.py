"""MCP prompts: guided workflows a client can offer its user ("create an image template", "review my template").

The text names only tools the server really registered, so a prompt never sends the model after a tool
that does not exist in this build.
"""

from __future__ import annotations

import re
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from pydantic import Field

from ..server.engine import Engine

MAX_INLINE_CHARS = 200_000  # a template is a few KiB; anything bigger is pasted by reference


def _fence(text: str) -> str:
    # A longer fence than any backtick run in the text keeps a pasted template intact.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}yaml\n{text.rstrip()}\n{ticks}"


def _looks_like_name(text: str) -> bool:
    stripped = text.strip()
    return "\n" not in stripped and ":" not in stripped.removeprefix("template://")


def create_text(request: str, target: str | None, tools: set[str]) -> str:
    target_line = f"\nTarget: {target.strip()}" if target and target.strip() else ""
    steps = [
        "Call `search_templates` with the request (add os/dist/arch/image_type filters when the target is known) "
        "and read the best one or two matches through their `template://` resource URIs, so the result stays "
        "close to a template that is known to build."
    ]
    if "generate_template" in tools:
        steps.append(
            "Call `generate_template` with the request. It grounds on those templates, validates, fixes and "
            "verifies packages itself; keep the `conversation_id` it returns.")
    else:
        steps.append("Start from the closest template and change only what the request needs: image name, "
                     "target, disk size and partitions, packages, users, kernel.")
    steps.append("Call `validate_template` with the YAML. Fix every error at the line and path it names, "
                 "following its hint, and validate again until `valid` is true. Explain any warnings you keep.")
    if "verify_packages" in tools:
        steps.append("Call `verify_packages` with the YAML. Replace each missing package with one of its "
                     "suggestions (or drop it and say why). If `verified` is false a repository could not be read: "
                     "say the packages are unchecked, not missing.")
    if "refine_template" in tools:
        steps.append("For follow-up changes the user asks for, call `refine_template` with the `conversation_id` "
                     "and the change in plain words instead of editing by hand.")
    steps.append("Answer with the final template in one ```yaml block, then a short summary: target "
                 "(os/dist/arch/image type), disk layout, notable packages, and anything still unverified.")
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    return (f"Create an OS Image Composer image template for this request:\n\n{request.strip()}{target_line}\n\n"
            f"Work through these steps with the image-composer tools:\n{numbered}\n\n"
            "Never invent package names or partition type GUIDs; take them from existing templates or the tools.")


def review_text(template: str, focus: str | None, tools: set[str]) -> str:
    if _looks_like_name(template):
        name = template.strip().removeprefix("template://")
        subject = f"the indexed template `{name}` (read it from the resource `template://{name}`)"
        arg = f'name="{name}"'
    elif len(template) > MAX_INLINE_CHARS:
        subject = "the template the user pasted (it is too long to repeat here)"
        arg = "yaml=<the template text>"
    else:
        subject = f"this template:\n\n{_fence(template)}\n"
        arg = "yaml=<the template text above>"
    checks = [f"Call `validate_template` with {arg}. List every error and warning with its line, path and hint."]
    if "verify_packages" in tools:
        checks.append(f"Call `verify_packages` with {arg} to check each package exists for the template's "
                      "distribution and architecture; give the suggestions for missing ones. If `verified` is "
                      "false, report those packages as unchecked rather than missing.")
    checks.append("Review what the tools cannot judge: does the target (os/dist/arch/image type) fit the purpose; "
                  "is the disk big enough and the partition layout sensible (ESP for EFI, root last, separate "
                  "/data or /var when useful); bootloader vs boot mode and secure boot; kernel choice; users, "
                  "passwords (hashed, never plain text) and SSH; packages that are unused, duplicated or missing "
                  "for the stated use.")
    checks.append("Answer with a verdict (ready / needs changes), a table of findings (severity, line, what, fix) "
                  "and, when changes are needed, the corrected template in one ```yaml block.")
    focus_line = f"\nPay special attention to: {focus.strip()}." if focus and focus.strip() else ""
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(checks, 1))
    return f"Review {subject}{focus_line}\n\nSteps:\n{numbered}"


def register(mcp: MCPServer, engine: Engine) -> None:
    del engine  # the prompts only describe tool calls; kept for the uniform register(mcp, engine) signature

    async def tool_names() -> set[str]:
        return {t.name for t in await mcp.list_tools()}

    @mcp.prompt(name="create-image-template", title="Create an image template",
                description="Guide the assistant through finding a close template, generating, validating and "
                            "verifying a new OS Image Composer template.")
    async def create_image_template(
        request: Annotated[str, Field(description="what the image is for, e.g. 'minimal edge image with docker "
                                                  "and ssh for ubuntu 24.04'")],
        target: Annotated[str | None, Field(description="optional target, e.g. 'azl3 x86_64 raw'")] = None,
    ) -> list[Message]:
        return [UserMessage(create_text(request, target, await tool_names()))]

    @mcp.prompt(name="review-template", title="Review my template",
                description="Validate a template, verify its packages and review its design, with concrete fixes.")
    async def review_template(
        template: Annotated[str, Field(description="the template YAML text, or the name of an indexed template")],
        focus: Annotated[str | None, Field(description="optional focus, e.g. security, disk layout, size")] = None,
    ) -> list[Message]:
        return [UserMessage(review_text(template, focus, await tool_names()))]
