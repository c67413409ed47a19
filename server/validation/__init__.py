"""Is a template right? The issue model (report), upstream (os-image-composer) compatibility (upstream),
schema messages, the rule families (target_rules, disk_rules, package_rules, system_rules, consistency) and
the entry point (validator: validate_text, validate_data).

Owns: the issue model and every verdict about a template; no fact tables (those are in server/knowledge).
May import: core, knowledge.
"""
