"""Package repositories: index parsers, the source catalogue, the HTTP cache, the verifier, and the
build-readiness checks (dependency closure, disk fit).

Owns: what a distribution's repositories hold. May import: core, knowledge, validation.
"""
