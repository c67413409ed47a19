"""The MCP-facing layer: the app (tools, resources, prompts), the HTTP transports, the command line.

Owns: the protocol. May import: everything, including mcp, tools/ and resources/. Nothing else imports it.
"""
