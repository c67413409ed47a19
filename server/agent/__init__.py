"""Generation and refinement: the loop, prompts, plan mode, repair, and conversations with their stores.

Owns: a conversation's drafts. May import: every room below it, never the engine: it receives the services it
needs (agent.services).
"""
