"""The one knowledge source: distributions, architectures, partition types, package equivalences,
capability groups, glossary terms and size rules, read from resources/*.yaml by one loader.

Owns: every fact table about the domain; sizes (parsing and formatting). May import: core.
"""
