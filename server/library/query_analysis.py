"""Reading a search query: package names and their aliases, spelling repair, concept and term plans.

:class:`QueryAnalyzer` turns the words a user typed into a :class:`QueryAnalysis` that
server/library/search.py scores templates against.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.config import AISettings
from ..knowledge import package_names
from ..knowledge.glossary import Concept, glossary_words, load_glossary
from ..knowledge.loader import load_capabilities
from ..knowledge.request_words import load_request_words
from ..knowledge.typos import slip_of
from . import vocabulary as vocab
from .long_lived import bulk_objects

_NAME_PARTS = re.compile(r"[-_.+]")
SPELLING_CHUNK = 1024  # words per step of SpellingIndex.build_ahead: ~10 ms


@functools.lru_cache(maxsize=4096)
def package_aliases(name: str) -> frozenset[str]:
    """The name and the names that stand for the same software elsewhere (shared package knowledge)."""
    low = name.lower()
    out = {low, *package_names.equivalents(low)}
    for other in list(out):
        out.update(package_names.equivalents(other))
    return frozenset(out)


def _known_alias_names() -> set[str]:
    return set(package_names.known_names())


def package_stem_keys(package: str) -> set[str]:
    """Stems a person may name a package by: leading runs of its name parts, with and without a namespace
    prefix (``intel-``, ``python3-``, ``ros-jazzy-``, ``lib``…), stopping at version parts. So
    ``acpi-call-dkms`` answers to acpi-call, ``intel-dlstreamer-2025.2.0`` to dlstreamer,
    ``prometheus-node-exporter`` to node-exporter, ``linux-headers-6.12-intel`` to linux-headers."""
    keys: set[str] = set()
    low = package.lower()
    for name in {low, load_glossary().package_namespace.sub("", low, count=1)}:
        run: list[str] = []
        for part in _NAME_PARTS.split(name):
            if not part or part[0].isdigit():
                break
            run.append(part)
            keys.add("-".join(run))
            trimmed = part.rstrip("0123456789")
            if len(run) == 1 and trimmed != part and len(trimmed) >= 3:
                keys.add(trimmed)  # gstreamer1.0-tools, libze1
    return keys


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1:] for i in range(len(word))}


def _within_one_edit(a: str, b: str) -> bool:
    """Damerau distance ≤ 1: one insertion, deletion, substitution or swap of neighbours."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def _add_deletions(index: dict[str, set[str]], words: list[str]) -> None:
    """Each word and its deletions -> the word, kept out of the cyclic GC (~45,000 sets at 100,000 templates,
    kept until the catalog changes)."""
    with bulk_objects():
        for word in words:
            for key in {word, *_deletions(word)}:
                index.setdefault(key, set()).add(word)


class SpellingIndex:
    """Reads a misspelt query word ("ubunut", "promethius", "virtualisation") as the one known word within one
    edit of it. Known words: the domain vocabulary, the glossary, the catalog's package names and stems, and
    the catalog's most frequent terms. Short words (< MIN_FUZZY_LEN) and known words are never changed."""

    MIN_FUZZY_LEN = 5
    MEMO_WORDS = 20_000  # words remembered with their reading (forgotten all at once past it)

    def __init__(self, words: dict[str, int], corpus_terms: Counter[str] | None = None):
        self.known = words  # word -> frequency (ties go to the more frequent word)
        self.corpus_terms = corpus_terms if corpus_terms is not None else Counter()
        # Each known word and its deletions -> the words they come from; see build_ahead.
        self._by_deletion: dict[str, set[str]] | None = None
        self._read_as: dict[str, str | None] = {}
        self.abandoned = False  # the catalog moved on before build_ahead finished: it stops

    def build_ahead(self, make_way: Callable[[], object], chunk: int = SPELLING_CHUNK) -> None:
        """Build the index before a query needs it, a chunk of words at a time, making way for searches.

        Why: built by the first query with a word the catalog does not know, it cost that one search ~60-100
        ms at 100,000 templates (~7 ms at 48). A query that comes before this is done builds the index itself,
        and this stops."""
        words = [w for w in self.known if self._indexed(w)]
        index: dict[str, set[str]] = {}
        for start in range(0, len(words), chunk):
            make_way()
            if self._by_deletion is not None or self.abandoned:
                return
            _add_deletions(index, words[start:start + chunk])
        if self._by_deletion is None:
            self._by_deletion = index

    def _indexed(self, word: str) -> bool:
        return len(word) >= self.MIN_FUZZY_LEN - 1 and word.isascii()

    def _index(self) -> dict[str, set[str]]:
        if self._by_deletion is None:
            index: dict[str, set[str]] = {}
            _add_deletions(index, [w for w in self.known if self._indexed(w)])
            self._by_deletion = index
        return self._by_deletion

    def correct(self, token: str) -> str | None:
        """The known word ``token`` is read as, None when it is known or no known word is one edit away.
        Remembered per word: a word no template uses costs ~20-50 us to look up, and users repeat theirs."""
        try:
            return self._read_as[token]
        except KeyError:
            pass
        if len(self._read_as) >= self.MEMO_WORDS:
            self._read_as.clear()
        fixed = self._read_as[token] = self._correct(token)
        return fixed

    def _correct(self, token: str) -> str | None:
        if (len(token) < self.MIN_FUZZY_LEN or not token.isalpha()
                or any(w in self.known or self.corpus_terms.get(w) for w in (token, vocab.stem(token)))):
            return None  # a plural of a known word ("headers") is no misspelling
        index = self._index()
        found = set().union(*(index.get(k, set()) for k in {token, *_deletions(token)}))
        close = sorted((w for w in found if _within_one_edit(token, w) and slip_of(token, w)),
                       key=lambda w: (-self.known[w], w))
        return close[0] if close else None


# Words between a negation and what it negates: "without the full desktop", "no extra gui".
_NEGATED_ARTICLES = frozenset({"the", "a", "an", "any", "full", "whole", "extra", "additional", "kind", "of"})
# Negations of several words, or split by the tokenizer ("isn't" -> isn, t): one negation word.
_NEGATING_PAIRS = {("rather", "than"), ("other", "than"), ("instead", "of"), ("isn", "t"), ("aren", "t"),
                   ("is", "not"), ("are", "not"), ("but", "not"), ("free", "of")}


def _negations_as_words(tokens: list[str]) -> list[str]:
    """The query's negations as its negation words read them: "docker-free" and "gui-less" are "without docker"
    and "without gui" (request_words.yaml ``negating_suffixes``), "rather than", "isn't" and "instead of" are
    "without", and an absence word ("headless") is "without" what it says is absent (capabilities.yaml
    ``absence_words``). A suffix of likeness or quality leaves the word alone ("rhel-like" -> rhel)."""
    words = load_request_words()
    negating = tuple(f"-{s}" for s in words.negating_suffixes)
    qualifying = tuple(f"-{s}" for s in words.compound_suffixes)
    absent = load_capabilities().absence_words
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i + 1 < len(tokens) and (tok, tokens[i + 1]) in _NEGATING_PAIRS:
            out.append("without")
            i += 2
            continue
        if tok.endswith(negating) and tok.count("-") == 1:
            out += ["without", tok.rsplit("-", 1)[0]]
        elif tok.endswith(qualifying) and tok.count("-") == 1:
            out.append(tok.rsplit("-", 1)[0])
        elif tok in absent:  # "headless": without desktop and kiosk
            out += [tok, "without", *" and ".join(absent[tok]).split()]
        else:
            out.append(tok)
        i += 1
    return out


# Words that name a cloud as well as a distribution: with another distribution named, they are the cloud.
_CLOUD_AND_DIST = frozenset({"azure"})


class SearchInputError(ValueError):
    """A search argument that cannot be used; the message says how to fix it."""


@dataclass
class QueryAnalysis:
    text: str
    query_type: str
    tokens: list[str]
    content_terms: list[str]
    packages: list[str]
    excluded: list[str]
    density: float
    wants: dict[str, str] = field(default_factory=dict)  # dist/arch/image_type stated in the query
    # Package mentions by stem ("v4l2loopback" -> v4l2loopback-dkms): mention -> catalog names it stands for.
    package_sets: dict[str, frozenset[str]] = field(default_factory=dict)
    # Glossary concepts the query names, each with the content words that named it.
    concepts: list[tuple[Concept, tuple[str, ...]]] = field(default_factory=list)
    corrections: list[tuple[str, str]] = field(default_factory=list)  # (as typed, as read)
    # The target named by its maker ("microsoft's distro"), in its own name: embedded beside the query, as a
    # concept named without its words is, since the words said say nothing of it to the model.
    target_label: str | None = None

    def expansion_terms(self) -> list[str]:
        """Words the templates use for the concepts named in plain words (both search legs add them)."""
        out: list[str] = []
        for concept, _ in self.concepts:
            out.extend(t for t in concept.terms if t not in out)
        return out

    def embedding_labels(self) -> list[str]:
        """Texts embedded beside the query: a label for each concept named without any of its own words,
        and each spelling correction."""
        labels = [c.label for c, words in self.concepts if not set(words) & set(c.terms)]
        return labels + [read for _, read in self.corrections] + ([self.target_label] if self.target_label else [])


_stem = vocab.stem
Spelt = tuple[list[str], list[tuple[str, str]]]  # a query's tokens as read, and (as typed, as read) pairs


@functools.lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    """Common English words, which are never misspellings: "control plane" is no "control plate" because a
    glossary phrase names license plates. Loaded on the first query with a word to check (~20,000 words, once)."""
    from .embed_local import english_words

    return english_words()


class QueryAnalyzer:
    """Classifies a query and pulls out packages, exclusions and stated targets."""

    def __init__(self, settings: AISettings, known_packages: set[str], vocabulary_terms: set[str],
                 stems: dict[str, frozenset[str]] | None = None, spelling: SpellingIndex | None = None):
        self.settings = settings
        self.spelling = spelling
        self.known_packages = known_packages | _known_alias_names()
        self.vocabulary_terms = vocabulary_terms
        self.stems = stems or {}
        self.glossary = load_glossary()
        target_words = {w for words in (*vocab.DIST_WORDS.values(), *vocab.ARCH_WORDS.values(),
                                        *vocab.IMAGE_TYPE_WORDS.values()) for w in words}
        self._not_stems = (self.glossary.generic_package_parts | self.glossary.phrase_words | vocab.STOPWORDS
                           | vocab.NEGATION_WORDS | target_words)

    def _stem_mentions(self, content: list[str], packages: list[str]) -> dict[str, frozenset[str]]:
        """Package names given by stem: longest runs of adjacent words first ("linux headers" -> linux-headers)."""
        found: dict[str, frozenset[str]] = {}
        used: set[int] = set()
        for n in (3, 2, 1):
            for i in range(len(content) - n + 1):
                span = range(i, i + n)
                if used & set(span):
                    continue
                key = "-".join(content[i:i + n])
                if n == 1 and (key in packages or key in self._not_stems or len(key) < 3 or key[0].isdigit()):
                    continue
                names = self.stems.get(key)
                if names and key not in packages:
                    found[key] = names
                    used.update(span)
        return found

    def spelt(self, query: str) -> Spelt:
        """The query's tokens as read, and its :meth:`corrections`."""
        tokens, read = vocab.read_word_phrases(_negations_as_words(vocab.tokenize(query)))
        return tokens, read + self.corrections(tokens)

    def corrections(self, tokens: list[str]) -> list[tuple[str, str]]:
        """(as typed, as read) for each misspelt token, which ``tokens`` then holds as read. Alone, the few
        microseconds of an analysis that tell which words a search embeds beside its query."""
        corrections: list[tuple[str, str]] = []
        if self.spelling is not None:
            for i, tok in enumerate(tokens):
                fixed = (None if tok in self.known_packages or tok in vocab.STOPWORDS or tok in _english()
                         else self.spelling.correct(tok))
                if fixed:
                    corrections.append((tok, fixed))
                    tokens[i] = fixed
        return corrections

    def analyze(self, query: str, spelt: Spelt | None = None) -> QueryAnalysis:
        """``spelt``: the query's tokens as read and their :meth:`corrections`, when already worked out."""
        tokens, corrections = spelt if spelt is not None else self.spelt(query)
        if any(t in _CLOUD_AND_DIST for t in tokens) and any(
                vocab.dist_for_word(t) and t not in _CLOUD_AND_DIST for t in tokens):
            # "ubuntu on azure": the cloud, which any distribution's cloud images serve; as a word it had matched
            # Azure Linux's templates by keyword and full text, above the Ubuntu cloud images asked for
            tokens = ["cloud" if t in _CLOUD_AND_DIST else t for t in tokens]
        excluded, negated_idx = self._negations(tokens)
        packages: list[str] = []
        content: list[str] = []
        technical = 0
        for i, tok in enumerate(tokens):
            if tok in vocab.NEGATION_WORDS or i in negated_idx:
                continue
            is_pkg = tok in self.known_packages
            if is_pkg and tok not in packages:
                packages.append(tok)
            if tok in vocab.STOPWORDS:
                continue
            content.append(tok)
            if is_pkg or tok in self.vocabulary_terms or _stem(tok) in self.vocabulary_terms:
                technical += 1
        stem_sets = self._stem_mentions(content, packages)
        for key in stem_sets:
            packages.append(key)
            technical += 1
        words = [t for t in tokens if t not in vocab.NEGATION_WORDS]
        density = technical / len(words) if words else 0.0
        cls = self.settings.classification
        if excluded:
            qtype = "negation"
        elif len(packages) >= cls.package_threshold:
            qtype = "package-explicit"
        elif density >= cls.keyword_density and len(content) >= 2:
            qtype = "keyword-heavy"
        else:
            qtype = "semantic"
        read = " ".join(tokens) if corrections else query
        wants = self._wants(content)
        caps = load_capabilities()
        maker = caps.maker_named(query) if query and not {"dist", "os"} & set(wants) else None
        if maker:  # "microsoft's linux"; "microsoft" alone may be the cloud
            dists = list(caps.families[maker].dists)
            wants.update({"dist": dists[0]} if len(dists) == 1 else {"os": maker})
            wants.pop("os", None) if "dist" in wants else None
        return QueryAnalysis(query, qtype, tokens, content, packages, excluded, density, wants, stem_sets,
                             self._concepts(read, content), corrections,
                             caps.families[maker].label if maker else None)

    def _concepts(self, query: str, content: list[str]) -> list[tuple[Concept, tuple[str, ...]]]:
        out = []
        for concept, phrases in self.glossary.match(query):
            # The words that named it must be wanted words: "without nginx" names no web server.
            for phrase in phrases:
                # Query tokens keep dashes ("write-protected"); glossary words do not.
                covered = tuple(t for t in content if set(glossary_words(t)) & set(phrase))
                if covered:
                    out.append((concept, covered))
                    break
        return out

    @staticmethod
    def _negations(tokens: list[str]) -> tuple[list[str], set[int]]:
        """Terms after without/no/exclude..., continuing through 'and', 'or' and commas."""
        excluded: list[str] = []
        idx: set[int] = set()
        i = 0
        while i < len(tokens):
            if tokens[i] in vocab.NEGATION_WORDS:
                j = i + 1
                while j < len(tokens) and tokens[j] in _NEGATED_ARTICLES:  # "without the full desktop"
                    j += 1
                while j < len(tokens):
                    tok = tokens[j]
                    if tok in ("and", "or", "nor", "any"):
                        j += 1
                        continue
                    if tok in vocab.STOPWORDS and tok not in ("gui",):
                        break
                    excluded.append(tok)
                    if "-" in tok and tok.replace("-", "").isalnum():  # "real-time" is also written "realtime"
                        excluded.append(tok.replace("-", ""))
                    idx.add(j)
                    j += 1
                    # "without docker and nginx" continues; "without docker for edge" stops at the stopword.
                    if j < len(tokens) and tokens[j] not in ("and", "or", "nor"):
                        break
                i = j
            else:
                i += 1
        return excluded, idx

    @staticmethod
    def _wants(content: list[str]) -> dict[str, str]:
        """The targets the query's words state (a target named by its maker is read by ``analyze``)."""
        wants: dict[str, str] = {}
        # "wind river", "red hat", "centos stream" name a target in two words; "cbl-mariner" in one dashed word.
        pairs = [f"{a}-{b}" for a, b in zip(content, content[1:], strict=False)]
        parts = [p for tok in content if "-" in tok for p in tok.split("-")]
        limbs = {i for i, tok in enumerate(content) if i and any(
            tok in vocab.ARCH_WORDS.get(a, ()) and content[i - 1] in after for a, after in vocab.ARCH_NOT_AFTER.items())}
        for tok in [*(t for i, t in enumerate(content) if i not in limbs), *parts, *pairs]:
            for arch, words in vocab.ARCH_WORDS.items():
                if tok in words and tok not in ("intel",):
                    wants["arch"] = arch
            for itype, words in vocab.IMAGE_TYPE_WORDS.items():
                if tok in (itype, *words[:2]) and tok != "disk":
                    wants["image_type"] = itype
            dists = vocab.dist_for_word(tok)
            if len(dists) == 1 and tok not in ("intel", "microsoft", "wind", "river", "debian-based"):
                wants["dist"] = dists[0]  # "azure" beside another distribution was read as "cloud" (analyze)
            elif "dist" not in wants:
                for os_id, words in vocab.OS_WORDS.items():
                    if tok in words:
                        wants["os"] = os_id
        if "dist" in wants:
            wants.pop("os", None)
        return wants


