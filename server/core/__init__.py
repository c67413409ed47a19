"""Shared plumbing every room may use: settings (config), where bundled data and per-user state live
(paths), logging and redaction (logs), bounded YAML reading (yamlsafe) and full-disk errors (diskfull).

Owns: no domain facts. May import: the standard library and third-party packages only.
"""
