"""mcp-server-image-composer: search, generate, refine, validate and verify OS Image Composer templates over MCP.

The import name is ``image_composer_mcp``: pyproject maps it onto the checkout root, whose ``server/`` (the app
and the engine), ``tools/`` (one module per MCP tool) and ``resources/`` are its sub-packages and whose
``image-templates/`` ships as package data.
"""
