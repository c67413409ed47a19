"""The deterministic composer: reading a request into a spec, choosing and editing a base template, disk
layout arithmetic, YAML output, answering questions about a template, and checking the request was met.

Owns: turning words into template edits. May import: core, knowledge, validation.
"""
