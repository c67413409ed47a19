"""``python -m image_composer_mcp``: the same entry point as the ``mcp-server-image-composer`` command."""

from image_composer_mcp.server.transport.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
