"""search_templates: hybrid search over the indexed templates."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from ..server.engine import Engine

if TYPE_CHECKING:
    from ..server.library.search import SearchOutcome
from ._common import MAX_NAME_CHARS, MAX_TEXT_CHARS, call_engine, result


class ScoreBreakdown(BaseModel):
    semantic: float = Field(description="meaning similarity, 0-1")
    keyword: float = Field(description="share of the query's words found in the template, 0-1")
    package: float = Field(description="share of the packages named in the query that the template installs, 0-1")


class TemplateHit(BaseModel):
    file: str = Field(description="path relative to its templates root")
    name: str
    description: str
    os: str
    dist: str
    arch: str
    image_type: str
    score: float
    scores: ScoreBreakdown
    penalties: list[str]
    matched_packages: list[str]
    matched_terms: list[str]
    uri: str = Field(description="resource URI with the full YAML")


class SearchResult(BaseModel):
    query: str
    query_type: str = Field(description="semantic, package-explicit, keyword-heavy or negation")
    weights: dict[str, float]
    excluded_terms: list[str]
    results: list[TemplateHit]
    message: str
    notices: list[str] = Field(default_factory=list,
                               description="what limits this answer, e.g. semantic search off: no embedding model")
    latency_ms: float


def to_model(outcome: SearchOutcome) -> SearchResult:
    hits = [
        TemplateHit(
            file=r.record.id, name=r.record.name, description=r.record.description, os=r.record.os,
            dist=r.record.dist, arch=r.record.arch, image_type=r.record.image_type, score=r.score,
            scores=ScoreBreakdown(semantic=r.semantic, keyword=r.keyword, package=r.package),
            penalties=r.penalties, matched_packages=r.matched_packages, matched_terms=r.matched_terms,
            uri=r.record.uri,
        )
        for r in outcome.results
    ]
    return SearchResult(query=outcome.query, query_type=outcome.query_type, weights=outcome.weights,
                        excluded_terms=outcome.analysis.excluded, results=hits, message=outcome.message,
                        notices=list(outcome.notices),
                        latency_ms=round(outcome.latency_ms, 2))


def to_text(model: SearchResult) -> str:
    notes = [f"Note: {n}" for n in model.notices]
    if not model.results:
        return "\n".join([*notes, f"No templates found for '{model.query}' ({model.query_type} query): {model.message}"])
    # The search's own message leads: it says what was read differently ("read 'ubunut' as 'ubuntu'") and which
    # results are under the threshold; and what the query excludes.
    excluded = f"; excluding {', '.join(model.excluded_terms)}" if model.excluded_terms else ""
    lines = [*notes, f"{model.message}{excluded}. Query: '{model.query}'"]
    for i, hit in enumerate(model.results, 1):
        s = hit.scores
        lines.append(f"{i}. {hit.name} [{hit.os}/{hit.dist} {hit.arch} {hit.image_type}] score {hit.score:.2f} "
                     f"(semantic {s.semantic:.2f}, keyword {s.keyword:.2f}, package {s.package:.2f})")
        if hit.description:
            lines.append(f"   {hit.description}")
        if hit.penalties:
            lines.append(f"   penalties: {'; '.join(hit.penalties)}")
        lines.append(f"   file: {hit.file}  resource: {hit.uri}")
    return "\n".join(lines)


def register(mcp: MCPServer, engine: Engine) -> None:
    @mcp.tool(
        name="search_templates",
        title="Search image templates",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    async def search_templates(
        query: Annotated[str, Field(max_length=MAX_TEXT_CHARS, description="what the image is for, in plain words or keywords")],
        top_k: Annotated[int, Field(description="how many results (1-50)")] = 5,
        os: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="exact filter, e.g. ubuntu, azure-linux")] = None,
        dist: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="exact filter, e.g. ubuntu24, azl3, elxr12")] = None,
        arch: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="exact filter: x86_64 or aarch64")] = None,
        image_type: Annotated[str | None, Field(max_length=MAX_NAME_CHARS, description="exact filter: raw, iso or img")] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Find OS Image Composer templates matching a description (hybrid semantic + keyword + package search).

        Use it to discover working templates before generating or editing one. Phrases like
        "without docker" penalise templates containing that; naming two or more packages boosts package
        matches. Each result has a score breakdown and a template:// resource URI with the full YAML."""
        outcome = await call_engine(engine, "search_templates", engine.search, query, top_k,
                                    os=os, dist=dist, arch=arch, image_type=image_type)
        model = to_model(outcome)
        return result(model, to_text(model))
