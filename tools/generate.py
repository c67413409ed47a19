"""generate_template: a new template from a plain-words request, grounded, validated and verified."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ..server.engine import Engine
from ..server.llm.chat import SamplingDeferred
from ._agent_common import TemplateResult, progress_reporter, sampling_provider, to_model, to_text
from ._common import MAX_NAME_CHARS, MAX_TEXT_CHARS, agent_call, result


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.tool(
        name="generate_template",
        title="Generate an image template",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=True),
    )
    async def generate_template(
        request: Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="what the image is for, in plain words")],
        ctx: Context[Any, Any],
        conversation_id: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="your own id for the conversation")] = None,
        os: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="target OS, e.g. ubuntu, azure-linux")] = None,
        dist: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="target distribution, e.g. ubuntu24, azl3")] = None,
        arch: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="x86_64 or aarch64")] = None,
        image_type: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="raw, iso or img")] = None,
        save_as: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="file name to save into the templates directory")] = None,
        overwrite: Annotated[bool, Field(description="replace an existing file of that name")] = False,
    ) -> Annotated[CallToolResult, TemplateResult]:
        """Create a new OS Image Composer template from a description ("minimal ubuntu 24.04 edge image with
        docker for arm64"). Retrieves the closest real templates, generates (LLM or the offline composer),
        validates, fixes, and verifies packages. Returns the YAML, the validator's verdict, package results and
        a conversation_id for refine_template."""
        try:
            outcome = await agent_call(engine, "generate_template", engine.agent.generate(
                request, conversation_id=conversation_id, os=os, dist=dist, arch=arch, image_type=image_type,
                save_as=save_as, overwrite=overwrite, sampling=sampling_provider(ctx, engine.settings.openai.timeout),
                progress=progress_reporter(ctx)))
        except SamplingDeferred as pending:  # 2026-07-28: the client's LLM answers on the next round
            return pending.payload
        model = to_model(outcome)
        return result(model, to_text(model))
