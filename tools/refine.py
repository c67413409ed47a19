"""refine_template: change the conversation's template, answer questions about it, or revert it.

No ``from __future__ import annotations``: the sampling resolvers are closures (see _sampling.py).
"""

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.types import CallToolResult, CreateMessageResult, ToolAnnotations
from pydantic import Field

from ..server.engine import Engine
from ._agent_common import TemplateResult, progress_reporter, to_model, to_text
from ._common import MAX_NAME_CHARS, MAX_TEXT_CHARS, agent_call, result
from ._sampling import ClientPlan, client_plan, plan_resolvers, sampling_gate, sampling_provider


def register(mcp: MCPServer, engine: Engine) -> None:
    async def plan(conversation_id: str, instruction: str, ctx: Context[Any, Any]) -> ClientPlan | None:
        return client_plan(await engine.agent.client_edit_plan(conversation_id, instruction,
                                                               sampling_gate(ctx, engine.settings.openai.timeout)))

    plan_question, plan_retry = plan_resolvers(plan)

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
        ready: Annotated[ClientPlan | None, Resolve(plan)],
        first: Annotated[CreateMessageResult | None, Resolve(plan_question)],
        retry: Annotated[CreateMessageResult | None, Resolve(plan_retry)],
        save_as: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="file name to save into the templates directory")] = None,
        overwrite: Annotated[bool, Field(description="replace an existing file of that name")] = False,
    ) -> Annotated[CallToolResult, TemplateResult]:
        """Modify the conversation's current template and keep everything the instruction does not touch;
        returns the new revision with a unified diff and the list of changes. Questions are answered without
        changing the template; 'undo' or 'revert to revision N' restores an earlier revision."""
        outcome = await agent_call(engine, "refine_template", engine.agent.refine(
            conversation_id, instruction, save_as=save_as, overwrite=overwrite,
            sampling=sampling_provider(ctx, engine.settings.openai.timeout, ready, first, retry), progress=progress_reporter(ctx)))
        model = to_model(outcome)
        return result(model, to_text(model))
