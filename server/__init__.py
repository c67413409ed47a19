"""The engine behind the MCP tools, in rooms layered lowest first: core, knowledge, llm, storage, validation,
composer, packages, library, agent; engine/ composes them (build_engine); transport serves them over MCP.
Each room's docstring says what it owns and what it may import (tests/unit/test_architecture.py checks it)."""
