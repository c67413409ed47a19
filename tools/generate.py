"""generate_template: a new template from a plain-words request, grounded, validated and verified.

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
    async def plan(request: str, os: str | None, dist: str | None, arch: str | None, image_type: str | None,
                   ctx: Context[Any, Any]) -> ClientPlan | None:
        constraints = {"os": os, "dist": dist, "arch": arch, "imageType": image_type}
        return client_plan(await engine.agent.client_plan(request, constraints, sampling_gate(ctx, engine.settings.openai.timeout)))

    plan_question, plan_retry = plan_resolvers(plan)

    @mcp.tool(
        name="generate_template",
        title="Generate an image template",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=True),
    )
    async def generate_template(
        request: Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="what the image is for, in plain words")],
        ctx: Context[Any, Any],
        ready: Annotated[ClientPlan | None, Resolve(plan)],
        first: Annotated[CreateMessageResult | None, Resolve(plan_question)],
        retry: Annotated[CreateMessageResult | None, Resolve(plan_retry)],
        conversation_id: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="your own id for a new conversation (omit it to get one); to change a template already generated, call refine_template with its conversation_id instead")] = None,
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
        outcome = await agent_call(engine, "generate_template", engine.agent.generate(
            request, conversation_id=conversation_id, os=os, dist=dist, arch=arch, image_type=image_type,
            save_as=save_as, overwrite=overwrite, sampling=sampling_provider(ctx, engine.settings.openai.timeout, ready, first, retry),
            progress=progress_reporter(ctx)))
        model = to_model(outcome)
        return result(model, to_text(model))
