"""The upstream contract: os-image-composer's own template schema, and bringing ADR metadata into it.

os-image-composer's ``LoadTemplate`` checks every user template against ``$defs/UserTemplate`` of its
embedded ``os-image-template.schema.json`` before it builds anything. We bundle that file byte for byte
(``resources/os-image-template.schema.json``; where it came from is recorded next to it in
``os-image-template.schema.source.json``) and never widen it: a template we call valid must load there.

Upstream's ``metadata`` allows only ``description``, ``use_cases`` and ``keywords``. The ADR's
``useCase``, ``capabilities`` and ``recommendedFor`` (and look-alikes models invent) are refused, so
:func:`conform` moves their words into ``keywords``/``use_cases``, where search still finds them.
The validator uses :data:`METADATA_MOVES` for its hints; the agent applies :func:`~..composer.output.conform_text` to
every model answer before validating it, and the composer to every refined template.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from ..core.paths import resource_text

SCHEMA_FILE = "os-image-template.schema.json"
SOURCE_FILE = "os-image-template.schema.source.json"
USER_TEMPLATE_REF = "#/$defs/UserTemplate"  # what upstream's ValidateUserTemplateJSON compiles

UPSTREAM_METADATA_FIELDS = ("description", "use_cases", "keywords")
# Metadata fields upstream refuses -> the upstream list their words belong in.
METADATA_MOVES: dict[str, str] = {
    "useCase": "use_cases",  # a category slug such as edge-gateway; goes first, as the index ranks it
    "capabilities": "keywords",
    "recommendedFor": "use_cases",  # natural-language "ideal for ..." phrases are use cases
    "useCases": "use_cases",
    "use_case": "use_cases",
    "usecases": "use_cases",
    "recommended_for": "use_cases",
    "tags": "keywords",
    "keyword": "keywords",
    "features": "keywords",
}

__all__ = [
    "METADATA_MOVES",
    "SCHEMA_FILE",
    "UPSTREAM_METADATA_FIELDS",
    "conform",
    "metadata_move",
    "schema",
    "schema_source",
    "schema_text",
    "upstream_errors",
    "user_template_validator",
]


# --------------------------------------------------------------------------- the bundled schema


def _bundled_text(name: str) -> str:
    return resource_text(name)


def schema_text() -> str:
    """Upstream's schema file exactly as bundled (also served as the ``schema://template`` resource)."""
    return _bundled_text(SCHEMA_FILE)


def schema() -> dict:
    """Upstream's schema document, unchanged. A fresh copy each call."""
    return json.loads(schema_text())


def schema_source() -> dict:
    """Where the bundled schema came from: repository, path, commit, sha256."""
    return json.loads(_bundled_text(SOURCE_FILE))


@functools.lru_cache(maxsize=1)
def user_template_validator() -> Draft202012Validator:
    """Plain jsonschema for ``$defs/UserTemplate`` of the unchanged document, as upstream compiles it.

    The document is registered under its own ``$id`` and referenced, not edited (upstream's file has
    no root ``$ref``). No format checker: upstream's santhosh-tekuri/jsonschema does not assert
    "format" either, and its own sample templates use url: "<URL>".
    """
    doc = schema()
    Draft202012Validator.check_schema(doc)
    registry = Registry().with_resource(SCHEMA_FILE, Resource.from_contents(doc))
    return Draft202012Validator({"$ref": SCHEMA_FILE + USER_TEMPLATE_REF}, registry=registry)


def upstream_errors(data: Any) -> list[str]:
    """Upstream's schema verdict on a parsed template: one "path: message" line per error, [] if accepted."""
    out = []
    for err in user_template_validator().iter_errors(data):
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        out.append(f"{where}: {err.message}")
    return sorted(out)


# --------------------------------------------------------------------------- metadata


def metadata_move(key: str) -> str | None:
    """What to do with a metadata field upstream refuses ("move these words into metadata.keywords"),
    or None when it is not one we know."""
    target = METADATA_MOVES.get(key)
    if target is None:
        return None
    what = "its value" if key == "useCase" else "these phrases" if target == "use_cases" else "these words"
    return f"move {what} into metadata.{target}"


def _texts(value: Any, *, split_commas: bool) -> list[str]:
    """The strings in a scalar or list value; nested structures are dropped."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        if isinstance(item, bool) or item is None or isinstance(item, dict | list):
            continue
        text = str(item).strip()
        parts = [p.strip() for p in text.split(",")] if split_commas and isinstance(value, str) else [text]
        out.extend(p for p in parts if p)
    return out


def _merge(existing: list[str], new: list[str]) -> list[str]:
    seen = {e.lower() for e in existing}
    out = list(existing)
    for item in new:
        if item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out


def conform(data: dict) -> tuple[dict, list[str]]:
    """A copy of ``data`` whose metadata upstream's schema accepts, and what was changed (for notes).

    ``data`` itself comes back, with no changes listed, when its metadata is already acceptable.

    Refused fields with a known meaning (:data:`METADATA_MOVES`) have their words moved into
    ``keywords``/``use_cases``; other refused metadata fields are dropped. A string where upstream
    wants a list becomes a list. Nothing outside ``metadata`` is touched.
    """
    if not isinstance(data, dict) or "metadata" not in data:
        return data, []
    meta = data["metadata"]
    out = copy.deepcopy(data)
    changes: list[str] = []
    if isinstance(meta, dict) and not meta:
        return data, []  # an empty mapping is fine upstream
    if meta is None or (isinstance(meta, list | str) and not meta):
        del out["metadata"]
        return out, ["removed the empty metadata section (os-image-composer wants a mapping there)"]
    if not isinstance(meta, dict):
        texts = _texts(meta, split_commas=False)
        out["metadata"] = {"description": "; ".join(texts)} if texts else {}
        if not texts:
            del out["metadata"]
        return out, ["metadata was not a mapping; kept its text as metadata.description" if texts
                     else "removed a metadata section that was not a mapping"]
    new: dict[str, Any] = {}
    description = meta.get("description")
    if description is not None:
        if isinstance(description, str):
            new["description"] = description
        else:
            texts = _texts(description, split_commas=False)
            if texts:
                new["description"] = "; ".join(texts)
            changes.append("metadata.description was not a string; " + ("joined its text" if texts else "dropped it"))
    for field in ("use_cases", "keywords"):
        if field in meta:
            value = meta[field]
            texts = _texts(value, split_commas=field == "keywords")
            if not isinstance(value, list) or len(texts) != len(value):
                changes.append(f"metadata.{field} rewritten as a list of strings")
            new[field] = _merge([], texts)
    moved: dict[str, list[str]] = {}
    dropped: list[str] = []
    for key, value in meta.items():
        if key in UPSTREAM_METADATA_FIELDS:
            continue
        target = METADATA_MOVES.get(str(key))
        texts = _texts(value, split_commas=target == "keywords") if target else []
        if target and texts:
            before = new.get(target, [])
            # The category leads the list, where the index always showed useCase.
            new[target] = _merge(texts, before) if key == "useCase" else _merge(before, texts)
            moved.setdefault(target, []).append(str(key))
        else:
            dropped.append(str(key))
    for target, keys in moved.items():
        changes.append(f"moved metadata.{', metadata.'.join(keys)} into metadata.{target} "
                       "(os-image-composer refuses those fields)")
    if dropped:
        changes.append(f"dropped metadata.{', metadata.'.join(dropped)} (os-image-composer refuses those fields)")
    if not changes:
        return data, []
    order = [k for k in UPSTREAM_METADATA_FIELDS if k in new]
    out["metadata"] = {k: new[k] for k in order}
    if not out["metadata"]:
        del out["metadata"]
    return out, changes
