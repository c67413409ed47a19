"""Domain words shared by keyword inference (templates) and query analysis (search), and the tokenizing
that goes with them.

Kept in one place so the words a template is described with and the words a query is understood with
cannot drift apart. The words themselves are knowledge: distributions' and architectures' in
resources/capabilities.yaml, the rest in resources/search_words.yaml; here they are shaped for lookups.
"""

from __future__ import annotations

import functools
import re

from ..knowledge.loader import load_capabilities
from ..knowledge.search_words import load_search_words

_CAPS = load_capabilities()
_WORDS = load_search_words()

# dist id -> single words a person might use for it (capabilities.yaml, search_words of each dist).
DIST_WORDS: dict[str, list[str]] = {d.id: list(d.search_words) for d in _CAPS.dists.values() if d.search_words}
# Releases with no template of their own: the words still name the OS (a preference for its family).
OS_WORDS: dict[str, list[str]] = {f.id: list(f.search_words) for f in _CAPS.families.values() if f.search_words}
OS_FOR_DIST: dict[str, str] = {d.id: d.family for d in _CAPS.dists.values()}
ARCH_WORDS: dict[str, list[str]] = {a: list(_CAPS.arch_search_words(a)) for a in _CAPS.arch_info
                                    if _CAPS.arch_search_words(a)}
# arch -> words after which its words name something else ("robot arm")
ARCH_NOT_AFTER: dict[str, set[str]] = {a: {str(w) for w in info.get("not_after") or ()}
                                       for a, info in _CAPS.arch_info.items()}

IMAGE_TYPE_WORDS: dict[str, list[str]] = {k: list(v) for k, v in _WORDS.image_types.items()}
FILENAME_HINTS: dict[str, list[str]] = {k: list(v) for k, v in _WORDS.filename_hints.items()}
PACKAGE_HINTS: list[tuple[re.Pattern[str], list[str]]] = [(p, list(w)) for p, w in _WORDS.package_hints]
CMDLINE_HINTS: list[tuple[re.Pattern[str], list[str]]] = [(p, list(w)) for p, w in _WORDS.cmdline_hints]
STOPWORDS: frozenset[str] = _WORDS.stopwords
TECHNICAL_TERMS: frozenset[str] = _WORDS.technical_terms
NEGATION_WORDS: frozenset[str] = _WORDS.negation_words
SYNONYMS: dict[str, list[str]] = {k: list(v) for k, v in _WORDS.synonyms.items()}

_POSSESSIVE = re.compile(r"(?<=[a-z0-9])['\u2019]s\b")
_TOKEN = re.compile(r"[a-z0-9][a-z0-9._+-]*[a-z0-9+]|[a-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-case tokens keeping technical names whole (``docker-ce``, ``x86_64``, ``24.04``)."""
    # a possessive's "s" is no word ("microsoft's distro" had matched templates on a lone "s")
    return _TOKEN.findall(_POSSESSIVE.sub("", text.lower()))


# Names in several words read as one word, as tokens -> the word: an architecture ("64-bit pc" -> x86_64), a
# release named in full ("jazzy jalisco" -> jazzy), whose second word no template uses, and a machine that has
# one architecture ("raspberry pi" -> aarch64, capabilities.yaml architectures' hardware).
WORD_PHRASES: dict[tuple[str, ...], str] = {
    **{tuple(tokenize(alias)): arch for arch, info in _CAPS.arch_info.items()
       for alias in (str(a) for a in info.get("aliases") or ()) if len(tokenize(alias)) > 1},
    **{tuple(tokenize(full)): codename for full, codename in _CAPS.full_release_names.items()},
    # a machine named instead of its architecture ("a Raspberry Pi 4", "graviton"): that architecture
    **{tuple(tokenize(machine)): arch for arch, info in _CAPS.arch_info.items()
       for machine in (str(m) for m in (info.get("hardware") or {}))}}
# Of those, the machines: their words stay beside the architecture read, since templates name them too
# ("Raspberry Pi-class UEFI boards").
MACHINE_PHRASES: frozenset[tuple[str, ...]] = frozenset(
    tuple(tokenize(str(m))) for info in _CAPS.arch_info.values() for m in (info.get("hardware") or {}))

# Looked up by their first word: a query's search reads every token through read_word_phrases before it embeds.
_PHRASES_BY_FIRST: dict[str, list[tuple[tuple[str, ...], str]]] = {}
for _phrase, _word in WORD_PHRASES.items():
    _PHRASES_BY_FIRST.setdefault(_phrase[0], []).append((_phrase, _word))


def read_word_phrases(tokens: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``tokens`` with each name in several words (:data:`WORD_PHRASES`) read as its one word, and (as typed,
    as read)."""
    out: list[str] = []
    read: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        for phrase, arch in _PHRASES_BY_FIRST.get(tokens[i], ()):
            span = tokens[i:i + len(phrase)]
            if tuple(span) == phrase or (len(span) == len(phrase) and tuple(span[:-1]) == phrase[:-1]
                                         and span[-1] == phrase[-1] + "s"):  # "64-bit pcs"
                out.extend([*span, arch] if phrase in MACHINE_PHRASES else [arch])
                read.append((" ".join(span), arch))
                i += len(phrase)
                break
        else:
            out.append(tokens[i])
            i += 1
    return out, read


def split_parts(name: str) -> list[str]:
    """File-name parts: ``ubuntu24-x86_64-edge-raw.yml`` -> ubuntu24, x86_64, edge, raw."""
    stem = re.sub(r"\.(ya?ml)$", "", name.lower())
    stem = stem.replace("x86_64", "x86§64")
    return [p.replace("§", "_") for p in re.split(r"[-_./\s]+", stem) if p]


def dist_for_word(word: str) -> list[str]:
    return [d for d, words in DIST_WORDS.items() if word in words or word == d]


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Plural to singular, just enough for matching ("containers" ~ "container", "libraries" ~ "library")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word
