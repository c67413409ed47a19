"""Is a template right? Schema messages, upstream (os-image-composer) compatibility, rule families and
the cross-section consistency checks.

Owns: the issue model and every verdict about a template. May import: core, knowledge.
"""
