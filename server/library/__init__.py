"""The template library: reading templates, the LanceDB index (which doubles as the embedding cache),
hybrid search, query vocabulary and the embedding providers.

Owns: finding templates. May import: core, knowledge, llm, storage.
"""
