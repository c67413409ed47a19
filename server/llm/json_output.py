"""Schema-constrained output: make a pydantic model's schema strict-compatible, read JSON out of a reply.

Every back-end is asked for JSON that follows a schema (OpenAI ``response_format`` json_schema, llama.cpp's
``json_object`` + ``schema``, Ollama's ``format``, sampling's schema-in-the-prompt). Constrained decoding
guarantees the shape only on some servers, so every answer is parsed and validated here before use.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import BaseModel

from .base import LLMError, snippet

_MAX_ERRORS = 5
_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


def strict_json_schema(model_cls: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model_cls`` in the form OpenAI's strict structured outputs accept.

    Strict mode (and llama.cpp's grammar conversion, which likes the same shape) needs, at every level:
    every property listed in ``required``, ``additionalProperties: false``, and no ``default``. A field
    that is optional in the model becomes nullable instead (``"type": ["string", "null"]`` for a plain value,
    ``anyOf: [<schema>, {"type": "null"}]`` for arrays, objects and enums), so the model answers ``null``
    where it has nothing to say; the caller treats ``null`` as "not given".
    ``dict[str, X]`` fields (free-form keys) cannot be strict and keep their ``additionalProperties``.
    """
    schema = copy.deepcopy(model_cls.model_json_schema())
    _make_strict(schema)
    for definition in schema.get("$defs", {}).values():
        _make_strict(definition)
    return schema


def _make_strict(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _make_strict(item)
        return
    if not isinstance(node, dict):
        return
    node.pop("default", None)
    if "anyOf" in node:
        _collapse_simple_any_of(node)
    props = node.get("properties")
    if node.get("type") == "object" and isinstance(props, dict):
        required = set(node.get("required", []))
        for key, prop in props.items():
            if key not in required and isinstance(prop, dict):
                _make_nullable(prop)
        node["required"] = list(props)
        node["additionalProperties"] = False
    for key in ("properties", "$defs"):
        if isinstance(node.get(key), dict):
            for child in node[key].values():
                _make_strict(child)
    for key in ("items", "anyOf", "oneOf", "allOf", "prefixItems"):
        if key in node:
            _make_strict(node[key])
    if isinstance(node.get("additionalProperties"), dict):
        _make_strict(node["additionalProperties"])


def _collapse_simple_any_of(node: dict[str, Any]) -> None:
    """``anyOf: [{type: string}, {type: null}]`` → ``type: [string, null]`` (what strict mode documents)."""
    options = node["anyOf"]
    if all(isinstance(o, dict) and set(o) <= {"type"} and isinstance(o.get("type"), str) for o in options):
        node["type"] = list(dict.fromkeys(o["type"] for o in options))
        del node["anyOf"]


_ANNOTATIONS = frozenset({"title", "description", "examples"})


def _make_nullable(prop: dict[str, Any]) -> None:
    """Let an optional field answer ``null``.

    A plain value gets the documented ``"type": [T, "null"]``. Anything structured (arrays, objects,
    enums, ``$ref``) becomes ``anyOf: [<schema>, {"type": "null"}]`` instead: llama.cpp's grammar converter
    turns a type list into bare types and would drop ``items``/``properties``/``enum`` (checked with
    llama-cpp-python 0.3.36: ``["array", "null"]`` let SmolLM2 put objects into a list of strings).
    """
    prop.pop("default", None)
    kind = prop.get("type")
    bare = set(prop) - {"type"} <= _ANNOTATIONS
    if bare and isinstance(kind, str):
        if kind != "null":
            prop["type"] = [kind, "null"]
        return
    if bare and isinstance(kind, list):
        if "null" not in kind:
            prop["type"] = [*kind, "null"]
        return
    if "anyOf" in prop and set(prop) - {"anyOf"} <= _ANNOTATIONS:
        if not any(isinstance(o, dict) and o.get("type") == "null" for o in prop["anyOf"]):
            prop["anyOf"].append({"type": "null"})
        return
    inner = {k: prop.pop(k) for k in list(prop) if k not in _ANNOTATIONS}
    prop["anyOf"] = [inner, {"type": "null"}]


def schema_problems(data: Any, schema: dict[str, Any]) -> list[str]:
    """Where ``data`` breaks ``schema``, one line per problem (path: message), at most a handful."""
    # Imported here: jsonschema takes ~35 ms to import, and the MCP tools import this module at start-up.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        validator = Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:  # our own schema is broken: a programming error worth a clear message
        raise LLMError(f"the JSON schema for structured output is invalid: {exc.message}") from None
    lines = []
    for err in errors[:_MAX_ERRORS]:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        lines.append(f"{where}: {err.message}")
    if len(errors) > _MAX_ERRORS:
        lines.append(f"... and {len(errors) - _MAX_ERRORS} more")
    return lines


def _json_candidates(text: str) -> list[str]:
    stripped = text.strip()
    found = [stripped]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        found.append(stripped[start : end + 1])
    return found


def parse_json_object(text: str, *, provider: str, name: str) -> dict[str, Any]:
    """The JSON object in a reply: the whole text, a ```json fence, or the outermost ``{...}``."""
    for candidate in _json_candidates(text or ""):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    raise LLMError(
        f"{provider}: the model's answer for {name} is not a JSON object: {snippet(text)!r}. "
        "Retry, use a larger model, or use provider 'offline'.",
        provider=provider,
    )


def checked_json(text: str, schema: dict[str, Any], *, provider: str, name: str) -> dict[str, Any]:
    """Parse and validate a structured answer; LLMError says which fields broke the schema."""
    data = parse_json_object(text, provider=provider, name=name)
    problems = schema_problems(data, schema)
    if problems:
        raise LLMError(
            f"{provider}: the model's answer for {name} does not follow the schema: {'; '.join(problems)}. "
            "Retry, use a larger model, or use provider 'offline'.",
            provider=provider,
        )
    return data


def schema_instructions(schema: dict[str, Any], name: str) -> str:
    """For back-ends with no schema parameter (sampling): the schema goes into the prompt."""
    return (
        f"Answer with one JSON object named {name} and nothing else: no prose, no code fence. "
        f"It must validate against this JSON Schema:\n{json.dumps(schema, separators=(',', ':'))}"
    )


def openai_schema_name(name: str) -> str:
    """OpenAI accepts ``[a-zA-Z0-9_-]{1,64}`` as a json_schema name."""
    cleaned = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_") or "answer"
    return cleaned[:64]
