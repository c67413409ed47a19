"""os-image-composer's own verdict for tests: its UserTemplate schema FILE, checked with plain jsonschema.

Deliberately independent of server.validation and server.upstream_compat, so a bug (or a widening) there
cannot hide a template the real tool would refuse. The bundled file is the exact upstream one
(tests/unit/test_validation.py compares it byte for byte with ../shared when that is present).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "resources" / "os-image-template.schema.json"


@functools.cache
def _validator() -> Draft202012Validator:
    doc = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    registry = Registry().with_resource("upstream.json", Resource.from_contents(doc))
    # What upstream's ValidateUserTemplateJSON compiles: <file>#/$defs/UserTemplate, the document unedited.
    return Draft202012Validator({"$ref": "upstream.json#/$defs/UserTemplate"}, registry=registry)


def refusals(data: Any) -> list[str]:
    """Upstream's schema errors for a parsed template ("path: message"), [] when it loads."""
    return sorted(f"{'.'.join(map(str, e.absolute_path)) or '$'}: {e.message}" for e in _validator().iter_errors(data))


def refusals_text(text: str) -> list[str]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"YAML: {exc}"]
    return refusals(data)
