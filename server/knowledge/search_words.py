"""The vocabulary of template search (``resources/search_words.yaml``): image-type words, what file-name
fragments, package names and kernel command lines imply, stopwords, technical terms, negations and synonyms.
The words naming distributions and architectures are ``search_words`` in capabilities.yaml (loader.py)."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping

RESOURCE = "search_words.yaml"

Hints = tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]


@dataclass(frozen=True)
class SearchWords:
    image_types: Mapping[str, tuple[str, ...]]
    filename_hints: Mapping[str, tuple[str, ...]]
    package_hints: Hints
    cmdline_hints: Hints
    stopwords: frozenset[str]
    technical_terms: frozenset[str]
    negation_words: frozenset[str]
    synonyms: Mapping[str, tuple[str, ...]]


def _words(values: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


def _table(raw: Any) -> dict[str, tuple[str, ...]]:
    return {str(k): _words(v) for k, v in (raw or {}).items()}


def _hints(raw: Any) -> Hints:
    return tuple((re.compile(str(entry["pattern"])), _words(entry.get("words"))) for entry in raw or ())


@functools.lru_cache(maxsize=1)
def load_search_words() -> SearchWords:
    """The bundled search vocabulary, parsed once."""
    raw: Mapping[str, Any] = load_mapping(resource_text(RESOURCE)).data
    return SearchWords(
        image_types=_table(raw.get("image_types")),
        filename_hints=_table(raw.get("filename_hints")),
        package_hints=_hints(raw.get("package_hints")),
        cmdline_hints=_hints(raw.get("cmdline_hints")),
        stopwords=frozenset(_words(raw.get("stopwords"))),
        technical_terms=frozenset(_words(raw.get("technical_terms"))),
        negation_words=frozenset(_words(raw.get("negation_words"))),
        synonyms=_table(raw.get("synonyms")),
    )
