"""The template library: reading templates, the LanceDB index (which doubles as the embedding cache),
hybrid search, query vocabulary and the embedding providers.

Modules: templates (reading one template); index (TemplateIndex: table and catalog), index_sync (keeping
it in line with the files), index_upkeep (optimize and the vector index), lance_table (LanceDB plumbing and
schema), vector_mirror, text_mirror and candidates (the two search legs, in memory while search is flat),
snapshot (that mirror on disk, for the next start); search (ranking), label_cache (the concept labels'
vectors between starts), npz_file (both files' format); vocabulary (query words); embedder (the provider interface), embeddings (choosing
one), embed_local / embed_numpy / embed_onnx (the in-process model), embed_remote (Ollama, OpenAI),
embed_cache (query vectors); model_setup (installing the local model).

Owns: finding templates. May import: core, knowledge, llm, storage.
"""
