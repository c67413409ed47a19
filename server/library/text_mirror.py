"""The full-text leg in memory (the mirror's below its size, text_leg's above): BM25 scores exactly as LanceDB's
FTS index gives them.

Why: LanceDB's full-text query costs ~2 ms of wall time and ~1.7 ms of CPU per query even at 48 rows
(planning and its runtime's threads, not the 0.4 ms of scoring). On two cores it ran beside the query's
embedding and slowed it by ~1 ms, so a search cost the embedding plus ~2 ms where the upstream baseline
costs the embedding plus ~0.3 ms. Postings in memory answer the same query in ~0.1 ms on the calling thread.

Exact, not similar: the analyzer reproduces the one our index creates (``lance_table.FTS_OPTIONS``): split
on every character that is not a letter or a digit, drop tokens of 40 bytes or more, lower-case, Snowball
English stemming, then English stop words (NLTK's list, matched after stemming, as LanceDB does: "does"
stems to "doe" and is kept), then ASCII folding. Scores are LanceDB's BM25: k1 1.2, b 0.75,
idf = ln(1 + (N - n + 0.5) / (n + 0.5)), float32 arithmetic, N counting only documents with at least one
token, a query token counted as often as it occurs. Tests compare the scores with LanceDB's on every
labelled query. Two differences remain, both in LanceDB's index, not in the scoring:
- its statistics lag edits: a replaced row still counts in N and the document frequencies until the index
  is rebuilt (on the bench's edited 1,000-template index, scores ~0.05 % apart); here they are the table's
  rows now;
- its order among rows tied at the cut-off is not defined; here the later row goes first, as it mostly
  does there.

Built from one snapshot of the table: Arrow splits the words, each distinct word is analysed once, and
the postings are grouped with numpy (10,000 templates, 11 MB of text: ~0.35 s, nearly all without the GIL;
100,000 a batch at a time, :meth:`TextMirror.from_batches`: ~5 s).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

import numpy as np

from . import heap
from .lance_table import FTS_OPTIONS

K1 = np.float32(1.2)
B = np.float32(0.75)
MAX_TOKEN_BYTES = int(FTS_OPTIONS["max_token_length"])
# A word is a run of letters and digits; everything else separates (tantivy's SimpleTokenizer: !is_alphanumeric).
# The same rule twice: for Arrow's RE2 (the rows) and Python's re (a query); a test checks that they agree on
# every assigned code point.
SEPARATORS = r"[^\p{L}\p{N}]+"
WORD = re.compile(r"[^\W_]+")
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
mightn mustn needn shan shouldn wasn weren won wouldn""".split())  # noqa: SIM905 - a list to read
# Letters NFKD does not decompose that ASCII folding still maps (the common ones in names and descriptions).
_FOLD = str.maketrans({"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "đ": "d", "ł": "l", "þ": "th", "ð": "d"})


def reproduces(options: dict[str, Any]) -> bool:
    """Whether this module's analyzer is the one ``options`` configure (otherwise LanceDB answers the leg)."""
    return (options.get("base_tokenizer") == "simple" and options.get("language") == "English"
            and all(options.get(flag) for flag in ("lower_case", "stem", "remove_stop_words", "ascii_folding")))


@functools.cache
def _stemmer() -> Any:
    """Snowball's English stemmer (PyStemmer, the C build of the algorithm LanceDB's rust-stemmers implements)."""
    import Stemmer

    return Stemmer.Stemmer("english")


def _fold(token: str) -> str:
    if token.isascii():
        return token
    decomposed = unicodedata.normalize("NFKD", token.translate(_FOLD))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def analyze_word(word: str) -> str | None:
    """The index token for one lower-cased word, or None when LanceDB's analyzer drops it."""
    if not word or len(word.encode()) >= MAX_TOKEN_BYTES:
        return None
    stem = _stemmer().stemWord(word)
    return None if stem in STOP_WORDS else _fold(stem)


def _counted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_counts=True)`` with numpy's stable sort: ~40 % faster on these keys."""
    if not len(keys):
        return keys, np.zeros(0, dtype=np.int64)
    ordered = np.sort(keys, kind="stable")
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


class _Tokens(dict[str, int]):
    """Lower-cased word -> token id (-1: dropped), filled on first sight: each distinct word is analysed once."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, int] = {}

    def __missing__(self, word: str) -> int:
        token = analyze_word(word)
        found = -1 if token is None else self.ids.setdefault(token, len(self.ids))
        self[word] = found
        return found


class TextMirror:
    """Postings of one snapshot's texts, row ``i`` being the mirror's row ``i``."""

    def __init__(self, texts: Any) -> None:
        """``texts``: one per row (an Arrow string array, or a list), null for a row without text.

        Splitting and grouping the words run in Arrow's kernels, which release the GIL: searches go on at
        full speed while a background thread builds this (a first version split words with Python's ``re``
        and held the GIL ~0.6 s at 10,000 rows, and searches meanwhile took 15-170 ms instead of ~8).
        Only the distinct words (~10,000 at 10,000 rows) are analysed in Python.
        """
        self._build([texts])

    @classmethod
    def from_batches(cls, batches: Iterable[Any]) -> TextMirror:
        """The mirror of the rows of ``batches`` (each as ``texts`` above) in their order, one batch split at a
        time: splitting all of 100,000 templates' words at once held ~1.2 GB at its peak."""
        mirror = cls.__new__(cls)
        mirror._build(batches)
        return mirror

    def _build(self, batches: Iterable[Any]) -> None:
        self._tokens = _Tokens()
        parts, lengths = [], []
        offset = 0
        for texts in batches:
            term, doc, freq, doc_len = self._pairs(texts)
            parts.append((term, doc + np.int32(offset), freq))
            lengths.append(doc_len)
            offset += len(doc_len)
            if len(lengths) > 1:  # the previous batch's temporaries are gone: see heap.trim
                heap.trim()
        self.rows = offset
        doc_len = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.float32)
        documents = int(np.count_nonzero(doc_len))  # LanceDB leaves rows without a token out of N
        avg_len = np.float32(doc_len.sum()) / np.float32(max(documents, 1))
        counts = np.zeros(len(self._tokens.ids), dtype=np.int64)
        for term, _, _ in parts:
            counts += np.bincount(term, minlength=len(counts))
        self._start = np.concatenate(([0], np.cumsum(counts)))
        total = int(self._start[-1])
        self._doc = np.empty(total, dtype=np.int32)
        self._weight = np.empty(total, dtype=np.float32)
        # Each batch's pairs go straight to their place (batches come in row order, so every term's rows stay
        # ascending), and each batch is let go once placed: 100,000 templates' postings are ~67 MB, and
        # gathering every batch's into one array and sorting that had held ~5x as much at its peak.
        cursor = self._start[:-1].copy()
        while parts:
            term, doc, tf = parts.pop(0)
            seen, first = np.unique(term, return_index=True)  # ``term`` is sorted: each term's pairs are a run
            run = np.diff(np.append(first, len(term)))
            at = cursor[term] + (np.arange(len(term)) - np.repeat(first, run))
            cursor[seen] += run
            norm = K1 * (np.float32(1.0) - B + B * doc_len[doc] / avg_len)
            self._doc[at] = doc
            self._weight[at] = ((K1 + np.float32(1.0)) * tf / (tf + norm)).astype(np.float32)
        n = counts.astype(np.float32)
        big_n = np.float32(documents)
        self._idf = np.log((big_n - n + np.float32(0.5)) / (n + np.float32(0.5)) + np.float32(1.0)).astype(np.float32)

    def _pairs(self, texts: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One batch's distinct (term, row) pairs in that order, with each pair's count, and each row's
        length in tokens; rows numbered from 0 within the batch."""
        import pyarrow as pa
        import pyarrow.compute as pc

        column = texts if isinstance(texts, pa.Array) else pa.array(list(texts), pa.string())
        n_rows = len(column)
        lists = pc.split_pattern_regex(pc.utf8_lower(column), SEPARATORS)
        rows = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
        words = pc.dictionary_encode(pc.list_flatten(lists))
        del lists
        distinct = words.dictionary.to_pylist()
        code_to_token = np.fromiter((self._tokens[w] if w else -1 for w in distinct), dtype=np.int64,
                                    count=len(distinct))
        codes = words.indices.to_numpy(zero_copy_only=False)
        tokens = code_to_token[codes] if len(codes) else np.zeros(0, dtype=np.int64)
        del words, codes
        kept = tokens >= 0
        tokens, rows = tokens[kept], rows[kept]
        doc_len = np.bincount(rows, minlength=n_rows).astype(np.float32)
        width = max(n_rows, 1)
        pairs, freq = _counted(tokens * width + rows)
        return ((pairs // width).astype(np.int32), (pairs % width).astype(np.int32), freq.astype(np.float32),
                doc_len)

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What :meth:`restore` needs: the vocabulary (JSON-able) and the postings (arrays)."""
        words = dict(self._tokens)
        vocabulary = {"rows": self.rows, "tokens": list(self._tokens.ids), "words": list(words),
                      "word_ids": list(words.values())}
        return vocabulary, {"doc": self._doc, "start": self._start, "weight": self._weight, "idf": self._idf}

    @classmethod
    def restore(cls, vocabulary: dict[str, Any], arrays: dict[str, np.ndarray]) -> TextMirror:
        """The mirror :meth:`state` described; ValueError when the parts do not fit together."""
        tokens, words, word_ids = vocabulary["tokens"], vocabulary["words"], vocabulary["word_ids"]
        rows = int(vocabulary["rows"])
        doc, start, weight, idf = (np.asarray(arrays[k]) for k in ("doc", "start", "weight", "idf"))
        if not (isinstance(tokens, list) and isinstance(words, list) and isinstance(word_ids, list)
                and all(isinstance(t, str) for t in tokens) and all(isinstance(w, str) for w in words)
                and all(isinstance(i, int) and -1 <= i < len(tokens) for i in word_ids) and len(words) == len(word_ids)):
            raise ValueError("the vocabulary is not lists of words and token ids")
        if (doc.dtype != np.int32 or weight.dtype != np.float32 or idf.dtype != np.float32
                or start.dtype != np.int64 or len(start) != len(tokens) + 1 or len(idf) != len(tokens)
                or len(weight) != len(doc) or (len(start) and (start[0] != 0 or start[-1] != len(doc)))
                or np.any(np.diff(start) < 0) or (len(doc) and (doc.min() < 0 or doc.max() >= rows))):
            raise ValueError("the postings do not fit the vocabulary")
        mirror = cls.__new__(cls)
        mirror.rows = rows
        mirror._tokens = _Tokens()
        mirror._tokens.ids.update((t, i) for i, t in enumerate(tokens))
        mirror._tokens.update(zip(words, word_ids, strict=True))
        mirror._doc, mirror._start, mirror._weight, mirror._idf = doc, start, weight, idf
        return mirror

    def forget_words(self) -> None:
        """Drop the build's cache of words already analysed: queries then analyse each word (a stemmer call, ~1
        us). Above the mirror's size the cache is worth ~11 MB at 100,000 of the benchmark's templates, whose
        names make most words distinct, and is not kept on disk."""
        self._tokens.clear()

    def query_tokens(self, query: str) -> list[int]:
        """The query's token ids, repeated as often as they occur; tokens no row has are left out (they add 0)."""
        ids = self._tokens.ids
        found = []
        for word in WORD.findall(query.lower()):
            token = self._tokens.get(word)
            if token is None:  # a word no row has: analysed, not remembered (queries are unbounded)
                analysed = analyze_word(word)
                token = ids.get(analysed, -1) if analysed is not None else -1
            if token >= 0:
                found.append(token)
        return found

    def search(self, query: str, keep: np.ndarray | None, limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` (row, BM25 score) pairs among the rows ``keep`` allows, best first (ties: later row first)."""
        scores = np.zeros(self.rows, dtype=np.float32)
        for token in self.query_tokens(query):
            lo, hi = self._start[token], self._start[token + 1]
            scores[self._doc[lo:hi]] += self._idf[token] * self._weight[lo:hi]
        # A row is matched when its score is above 0: every posting adds idf x weight, both above 0 (idf for any
        # n <= N below ~10^7 rows in float32, weight for tf >= 1). No second array to mark matches (~0.3 ms of
        # a query at 100,000 rows).
        hits = np.flatnonzero(scores)
        if keep is not None:
            hits = hits[keep[hits]]
        if len(hits) > limit:  # every row tied with the last one kept stays in the running, for the tie-break
            kth = np.partition(scores[hits], len(hits) - limit)[len(hits) - limit]
            hits = hits[scores[hits] >= kth]
        found = scores[hits]
        order = hits[np.lexsort((-hits, -found))[:limit]]  # by score, then the later row, both descending
        return list(zip(order.tolist(), scores[order].tolist(), strict=True))
