"""Developer-only tools: not part of the installed server."""
