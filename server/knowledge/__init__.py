"""The one knowledge source: distributions, architectures, partition types, package equivalences,
capability groups, glossary terms, the domain words of requests and size rules, read from resources/*.yaml
(loader.py; request_words.py for the words of requests).

Owns: every fact table about the domain; sizes (parsing and formatting). May import: core.
"""
