"""Tool arguments under another name (aliases) are rewritten to the tool's own parameter names."""

from __future__ import annotations

from image_composer_mcp.tools._common import inline_definitions, rewrite_arguments


def test_rewrite_arguments_rules():
    params = {"query", "top_k", "os", "dist", "arch", "image_type"}
    assert rewrite_arguments("search_templates", {"question": "q", "topK": 2, "imageType": "raw"}, params) == {
        "query": "q", "top_k": 2, "image_type": "raw"}
    # the canonical name wins; unknown names are left for validation to report
    assert rewrite_arguments("search_templates", {"query": "a", "prompt": "b"}, params) == {"query": "a", "prompt": "b"}
    assert rewrite_arguments("search_templates", {"bogus": 1}, params) == {"bogus": 1}
    # an alias that is a real parameter of the tool is never renamed
    assert rewrite_arguments("validate_template", {"name": "n"}, {"yaml", "name"}) == {"name": "n"}
    # a tool without the canonical parameter is left alone
    assert rewrite_arguments("generate_template", {"prompt": "p"}, {"other"}) == {"prompt": "p"}


def test_inline_definitions_replaces_references_and_keeps_recursive_ones():
    schema = {"type": "object", "properties": {"hit": {"$ref": "#/$defs/Hit"}, "hits": {"type": "array", "items": {"$ref": "#/$defs/Hit"}},
                                               "tree": {"$ref": "#/$defs/Node"}},
              "$defs": {"Hit": {"type": "object", "properties": {"score": {"$ref": "#/$defs/Score"}}},
                        "Score": {"type": "number"},
                        "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}
    out = inline_definitions(schema)
    assert out["properties"]["hit"] == {"type": "object", "properties": {"score": {"type": "number"}}}
    assert out["properties"]["hits"]["items"] == out["properties"]["hit"]
    # a recursive definition is inlined once, then referred to, and its definition stays
    assert out["properties"]["tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert set(out["$defs"]) == {"Node"}
    assert inline_definitions({"type": "string"}) == {"type": "string"}
    # a reference with a description beside it takes the field's description; one with a constraint stays
    annotated = inline_definitions({"properties": {"a": {"$ref": "#/$defs/S", "description": "mine"},
                                                   "b": {"$ref": "#/$defs/S", "minLength": 2}},
                                    "$defs": {"S": {"type": "string", "description": "theirs"}}})
    assert annotated["properties"]["a"] == {"type": "string", "description": "mine"}
    assert annotated["properties"]["b"] == {"$ref": "#/$defs/S", "minLength": 2} and set(annotated["$defs"]) == {"S"}
