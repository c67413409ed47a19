"""The domain glossary (``resources/glossary.yaml``): kinds of image and capability with the plain words people
use for them, read by search's query analysis."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.paths import resource_text
from ..core.yamlsafe import load_mapping
from .entries import as_tuple

GLOSSARY_RESOURCE = "glossary.yaml"


def glossary_words(text: str) -> tuple[str, ...]:
    """Words of a query or phrase as the glossary compares them: lower case, '-', '_', '/' as spaces, plural 's'
    dropped."""
    words = re.findall(r"[a-z0-9.+']+", re.sub(r"[-_/]+", " ", text.lower()))
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words)


@dataclass(frozen=True)
class Concept:
    id: str
    label: str
    terms: tuple[str, ...]
    phrases: tuple[tuple[str, ...], ...]  # each phrase as glossary words


class Glossary:
    """Kinds of image and capability with the plain words people use for them (``resources/glossary.yaml``)."""

    def __init__(self, raw: Mapping[str, Any]):
        self.concepts: dict[str, Concept] = {}
        for cid, spec in (raw.get("concepts") or {}).items():
            terms = as_tuple(spec.get("terms"))
            phrases = {glossary_words(p) for p in (*as_tuple(spec.get("phrases")), *terms)}
            self.concepts[cid] = Concept(cid, str(spec.get("label", cid)), terms,
                                         tuple(sorted(p for p in phrases if p)))
        self.generic_package_parts: frozenset[str] = frozenset(as_tuple(raw.get("generic_package_parts")))
        prefixes = [re.escape(p).replace(r"\*", "[a-z]+") + ("(?=[a-z]{3})" if p == "lib" else "")
                    for p in as_tuple(raw.get("package_namespaces"))]
        # Matches the namespace prefix of a package name, if any (see package_namespaces in the YAML).
        self.package_namespace: re.Pattern[str] = re.compile("^(?:" + "|".join(prefixes) + ")" if prefixes else "^$")
        # Words of the plain-language phrases: ordinary English, never read as package stems.
        self.phrase_words: frozenset[str] = frozenset(
            w for c in self.concepts.values() for p in c.phrases for w in p if len(p) > 1)
        # Phrases by their first word: a query is matched in one pass over its words, not per phrase (the
        # per-phrase scan over ~400 phrases cost ~9 ms a query, more than the embedding).
        self._by_first: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for order, concept in enumerate(self.concepts.values()):
            for phrase in concept.phrases:
                self._by_first.setdefault(phrase[0], []).append((order, phrase))

    def match(self, text: str) -> list[tuple[Concept, list[tuple[str, ...]]]]:
        """Concepts the text mentions, each with every phrase of it found in the text, longest first."""
        words = glossary_words(text)
        hits: dict[int, set[tuple[str, ...]]] = {}
        for i, word in enumerate(words):
            for order, phrase in self._by_first.get(word, ()):
                if words[i:i + len(phrase)] == phrase:
                    hits.setdefault(order, set()).add(phrase)
        concepts = list(self.concepts.values())
        return [(concepts[order], sorted(sorted(found), key=len, reverse=True)) for order, found in sorted(hits.items())]


@functools.lru_cache(maxsize=1)
def load_glossary() -> Glossary:
    """The bundled domain glossary, parsed once."""
    return Glossary(load_mapping(resource_text(GLOSSARY_RESOURCE)).data)


__all__ = ["Concept", "Glossary", "glossary_words", "load_glossary"]
