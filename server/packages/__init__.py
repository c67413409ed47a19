"""Package repositories: which repositories serve a distribution (sources), reading their indexes
(http_cache, index_parsers, index_store), whether names exist in them (matching, verifier), and the
build-readiness checks (closure with solv_loader, disk_fit, build_check).

Owns: what a distribution's repositories hold. May import: core, knowledge, validation.
"""
