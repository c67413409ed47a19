"""Tool arguments under another name (aliases) are rewritten to the tool's own parameter names."""

from __future__ import annotations

from image_composer_mcp.tools._common import rewrite_arguments


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
