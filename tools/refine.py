"""refine_template: change the conversation's template, answer questions about it, or revert it."""

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
        name="refine_template",
        title="Refine a generated template",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=True),
    )
    async def refine_template(
        conversation_id: Annotated[str, Field(max_length=MAX_NAME_CHARS, description="from generate_template")],
        instruction: Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="the change ('add docker and monitoring', 'set the disk "
                                                      "to 8GiB'), a question ('what packages are included?'), "
                                                      "or 'undo' / 'revert to revision 2'")],
        ctx: Context[Any, Any],
        save_as: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="file name to save into the templates directory")] = None,
        overwrite: Annotated[bool, Field(description="replace an existing file of that name")] = False,
    ) -> Annotated[CallToolResult, TemplateResult]:
        """Modify the conversation's current template and keep everything the instruction does not touch;
        returns the new revision with a unified diff and the list of changes. Questions are answered without
        changing the template; 'undo' or 'revert to revision N' restores an earlier revision."""
        try:
            outcome = await agent_call(engine, "refine_template", engine.agent.refine(
                conversation_id, instruction, save_as=save_as, overwrite=overwrite,
                sampling=sampling_provider(ctx, engine.settings.openai.timeout), progress=progress_reporter(ctx)))
        except SamplingDeferred as pending:  # 2026-07-28: the client's LLM answers on the next round
            return pending.payload
        model = to_model(outcome)
        return result(model, to_text(model))
