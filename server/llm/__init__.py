"""Chat providers over the field's own clients (openai, ollama), the JSON-output contract and LLM text
extraction.

Owns: talking to a chat model. May import: core.
"""
