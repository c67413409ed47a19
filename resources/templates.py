"""MCP resources: each template's YAML, a listing of all templates, and the template JSON Schema."""

from __future__ import annotations

import json

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import Completion, ResourceTemplateReference

from ..server.engine import Engine

MAX_COMPLETIONS = 100


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.resource("template://{name}", title="Image template", mime_type="application/yaml",
                  description="The full YAML of one indexed OS Image Composer template")
    async def template(name: str) -> str:
        await anyio.to_thread.run_sync(engine.ready)
        assert engine.index is not None
        rec = engine.index.by_name(name)
        if rec is None:
            raise ResourceNotFoundError(
                f"no template named '{name}'; read templates://index for the list or use search_templates"
            )
        follow = engine.settings.templates_follow_external_symlinks
        try:
            return await anyio.to_thread.run_sync(rec.read_text, follow)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise ResourceNotFoundError(f"template '{name}' is indexed but cannot be read: {reason}") from exc

    @mcp.resource("templates://index", title="Template index", mime_type="application/json",
                  description="All indexed templates: name, file, OS, distribution, arch, image type, description")
    async def template_index() -> str:
        await anyio.to_thread.run_sync(engine.ready)
        assert engine.index is not None
        rows = [
            {"name": r.name, "file": r.id, "root": r.root, "os": r.os, "dist": r.dist, "arch": r.arch,
             "image_type": r.image_type, "description": r.description, "uri": r.uri}
            for r in sorted(engine.index.records(), key=lambda r: r.name)
        ]
        return json.dumps({"count": len(rows), "templates": rows}, indent=1)

    @mcp.resource("schema://template", title="Template JSON Schema", mime_type="application/schema+json",
                  description="os-image-composer's own JSON Schema (draft 2020-12), unchanged; user templates "
                              "are checked against its $defs/UserTemplate")
    def template_schema() -> str:
        # Imported here: it loads jsonschema (~35 ms), which nothing on the way to the first search needs.
        from ..server.validation import upstream as upstream_compat

        try:
            return upstream_compat.schema_text()
        except OSError as exc:
            raise ResourceNotFoundError("the template schema is not bundled with this installation") from exc

    @mcp.completion()
    async def complete(ref, argument, context):  # noqa: ANN001 - signature fixed by the SDK
        if isinstance(ref, ResourceTemplateReference) and ref.uri == "template://{name}" and argument.name == "name":
            if not engine.is_ready:
                return Completion(values=[], has_more=False)
            prefix = (argument.value or "").lower()
            names = [n for n in engine.index.names() if n.lower().startswith(prefix)]
            if len(names) < MAX_COMPLETIONS:
                names += [n for n in engine.index.names() if prefix in n.lower() and n not in names]
            return Completion(values=names[:MAX_COMPLETIONS], total=len(names), has_more=len(names) > MAX_COMPLETIONS)
        return None
