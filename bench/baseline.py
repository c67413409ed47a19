"""The upstream `ai` search (os-image-composer internal/ai), re-implemented as the benchmark baseline.

Faithful to upstream's algorithm (see /work/helpers/upstream-baseline.md for the summary it follows):
its own searchable text per template, its query parser (whitespace words, one negated term per negation
word, package patterns by substring, its stop words), and its fixed scoring
``0.7*cosine + 0.2*keyword + 0.1*package``, ``x0.5`` when a negated term appears in the template, results
under 0.40 dropped, top 5. Brute force over every document, like upstream's in-memory index.

Implementation differences that change speed, not results: the brute force is vectorised (one matrix
product for the cosines, inverted lists for the keyword and package counts) instead of a per-document
loop, which if anything flatters the baseline's latency.

Also runnable as a process (``python -m bench.baseline --docs D --queries Q``) so its start-up time and
peak memory can be measured like our server's; it prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

WEIGHT_SEMANTIC = 0.70
WEIGHT_KEYWORD = 0.20
WEIGHT_PACKAGE = 0.10
MIN_SCORE = 0.40
TOP_K = 5
NEGATION_MULTIPLIER = 0.5
MAX_TEXT_PACKAGES = 20

NEGATION_WORDS = frozenset({"without", "no", "exclude", "not"})
PACKAGE_PATTERNS = ("docker", "nginx", "apache", "mysql", "postgres", "redis", "nodejs", "python", "golang", "rust",
                    "java", "curl", "wget", "git", "vim", "nano", "openssh", "cloud-init", "systemd")
STOP_WORDS = frozenset("""a an the is are was were be been being have has had do does did will would could should may
might must shall i me my we our you your he she it they them their this that these those and or but if then for of
to in on at by with from as into through during before after above below up down want need create make build please
can help""".split())  # noqa: SIM905
FILENAME_KEYWORDS = ("cloud", "edge", "minimal", "raw", "iso", "initrd", "desktop", "server", "dlstreamer", "emf", "rt")
PUNCTUATION = ".,!?;:"


@dataclass
class ParsedQuery:
    tokens: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    negative: list[str] = field(default_factory=list)


def parse_query(query: str) -> ParsedQuery:
    """Upstream parseQuery: see the module docstring and upstream-baseline.md."""
    out = ParsedQuery()
    in_negation = False
    for raw in query.lower().split():
        word = raw.strip(PUNCTUATION)
        if not word:
            continue
        if word in NEGATION_WORDS:
            in_negation = True
            continue
        if in_negation:
            out.negative.append(word)
            # Upstream resets the flag after one term unless that term is a conjunction.
            if word not in ("and", "or"):
                in_negation = False
            continue
        if any(p in word for p in PACKAGE_PATTERNS):
            out.packages.append(word)
        if word not in STOP_WORDS:
            out.tokens.append(word)
    return out


@dataclass
class UpstreamDoc:
    """What upstream keeps per template."""

    name: str  # file stem
    file_name: str
    image_name: str = ""
    description: str = ""
    use_cases: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)  # metadata keywords
    capabilities: list[str] = field(default_factory=list)
    recommended_for: list[str] = field(default_factory=list)
    dist: str = ""
    os: str = ""
    arch: str = ""
    image_type: str = ""
    packages: list[str] = field(default_factory=list)  # systemConfig.packages only

    def inferred_keywords(self) -> list[str]:
        stem = self.name.lower()
        return [k for k in FILENAME_KEYWORDS if k in stem]

    def all_keywords(self) -> list[str]:
        """GetAllKeywords: metadata keywords (or the file-name ones when there are none) plus capabilities."""
        return [*(self.keywords or self.inferred_keywords()), *self.capabilities]

    def keyword_set(self) -> set[str]:
        words = {k.lower() for k in self.all_keywords()}
        words |= {p for p in self.name.lower().split("-") if p}
        words |= {v.lower() for v in (self.dist, self.image_type, self.arch) if v}
        return words

    def package_names(self) -> set[str]:
        names: set[str] = set()
        for pkg in self.packages:
            low = pkg.lower()
            names.add(low)
            if "=" in low:
                names.add(low.split("=", 1)[0])
        return names

    def searchable_text(self) -> str:
        lines = [f"Template: {self.file_name}"]
        if self.image_name:
            lines.append(f"Name: {self.image_name}")
        if self.description:
            lines.append(f"Description: {self.description}")
        if self.use_cases:
            lines.append("Use cases: " + "; ".join(self.use_cases))
        for label, value in (("Distribution", self.dist), ("OS", self.os), ("Architecture", self.arch),
                             ("Image type", self.image_type)):
            if value:
                lines.append(f"{label}: {value}")
        if self.keywords:
            lines.append("Keywords: " + ", ".join(self.keywords))
        if self.capabilities:
            lines.append("Capabilities: " + ", ".join(self.capabilities))
        if self.recommended_for:
            lines.append("Recommended for: " + ", ".join(self.recommended_for))
        if self.packages:
            lines.append("Packages: " + ", ".join(self.packages[:MAX_TEXT_PACKAGES]))
        if not self.keywords:
            inferred = self.inferred_keywords()
            if inferred:
                lines.append("Keywords: " + ", ".join(inferred))
        return "\n".join(lines)


def _strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return []


def doc_from_data(file_name: str, data: dict[str, Any]) -> UpstreamDoc:
    """Upstream's template parser: the fields it reads and nothing else."""
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    image = data.get("image") if isinstance(data.get("image"), dict) else {}
    target = data.get("target") if isinstance(data.get("target"), dict) else {}
    system = data.get("systemConfig") if isinstance(data.get("systemConfig"), dict) else {}
    return UpstreamDoc(
        name=file_name.rsplit(".", 1)[0],
        file_name=file_name,
        image_name=str(image.get("name") or ""),
        description=str(meta.get("description") or system.get("description") or ""),
        use_cases=_strings(meta.get("use_cases")),
        keywords=_strings(meta.get("keywords")),
        capabilities=_strings(meta.get("capabilities")),
        recommended_for=_strings(meta.get("recommendedFor")),
        dist=str(target.get("dist") or ""),
        os=str(target.get("os") or ""),
        arch=str(target.get("arch") or ""),
        image_type=str(target.get("imageType") or ""),
        packages=_strings(system.get("packages")),
    )


def load_docs(root: Path) -> list[UpstreamDoc]:
    """Every template file directly in ``root`` (upstream does not recurse)."""
    from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping

    docs: list[UpstreamDoc] = []
    for path in sorted(root.iterdir()):
        if path.suffix not in (".yml", ".yaml") or not path.is_file():
            continue
        try:
            data = load_mapping(path.read_bytes()).data
        except YamlError:
            continue
        if isinstance(data, dict):
            docs.append(doc_from_data(path.name, data))
    return docs


@dataclass
class BaselineHit:
    name: str
    score: float
    semantic: float
    keyword: float
    package: float


class BaselineIndex:
    """Upstream's brute-force index over precomputed, L2-normalised vectors."""

    def __init__(self, docs: list[UpstreamDoc], vectors: np.ndarray):
        if len(docs) != len(vectors):
            raise ValueError(f"{len(docs)} documents but {len(vectors)} vectors")
        self.docs = docs
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.names = [d.name for d in docs]
        by_keyword: dict[str, list[int]] = defaultdict(list)
        by_package: dict[str, list[int]] = defaultdict(list)
        by_all_keyword: dict[str, list[int]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for word in doc.keyword_set():
                by_keyword[word].append(i)
            for name in doc.package_names():
                by_package[name].append(i)
            for word in {k.lower() for k in doc.all_keywords()}:
                by_all_keyword[word].append(i)
        self._keyword = {k: np.asarray(v, dtype=np.int64) for k, v in by_keyword.items()}
        self._package = {k: np.asarray(v, dtype=np.int64) for k, v in by_package.items()}
        self._all_keyword = {k: np.asarray(v, dtype=np.int64) for k, v in by_all_keyword.items()}

    def __len__(self) -> int:
        return len(self.docs)

    def _docs_where(self, table: dict[str, np.ndarray], names: Iterable[str]) -> np.ndarray:
        mask = np.zeros(len(self.docs), dtype=bool)
        for name in names:
            mask[table[name]] = True
        return mask

    def scores(self, query: str, qvec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(score, semantic, keyword, package) for every document."""
        parsed = parse_query(query)
        semantic = self.vectors @ np.asarray(qvec, dtype=np.float32)
        keyword = np.zeros(len(self.docs), dtype=np.float32)
        if parsed.tokens:
            for token in parsed.tokens:
                hit = self._keyword.get(token)
                if hit is not None:
                    keyword[hit] += 1.0
            keyword /= len(parsed.tokens)
        package = np.zeros(len(self.docs), dtype=np.float32)
        if parsed.packages:
            for qp in parsed.packages:
                qp = qp.lower()
                names = [n for n in self._package if n == qp or n.startswith(qp) or qp.startswith(n)]
                package += self._docs_where(self._package, names)
            package /= len(parsed.packages)
        score = WEIGHT_SEMANTIC * semantic + WEIGHT_KEYWORD * keyword + WEIGHT_PACKAGE * package
        if parsed.negative:
            penalised = np.zeros(len(self.docs), dtype=bool)
            for term in parsed.negative:
                penalised |= self._docs_where(self._package, [n for n in self._package if term in n])
                penalised |= self._docs_where(self._all_keyword, [k for k in self._all_keyword if term in k])
            score = np.where(penalised, score * NEGATION_MULTIPLIER, score)
        return score, semantic, keyword, package

    def search(self, query: str, qvec: np.ndarray, top_k: int = TOP_K, min_score: float = MIN_SCORE) -> list[BaselineHit]:
        score, semantic, keyword, package = self.scores(query, qvec)
        keep = np.flatnonzero(score >= min_score)
        if len(keep) > top_k:
            part = np.argpartition(-score[keep], top_k - 1)[:top_k]
            keep = keep[part]
        # Upstream sorts by score only; ties go by name so runs are reproducible.
        order = sorted(keep.tolist(), key=lambda i: (-float(score[i]), self.names[i]))[:top_k]
        return [BaselineHit(self.names[i], float(score[i]), float(semantic[i]), float(keyword[i]), float(package[i]))
                for i in order]


# ---- process mode: start-up, latency and memory measured like our server ------------------------------------

def save_docs(path: Path, docs: list[UpstreamDoc], vectors: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").write_text(json.dumps([asdict(d) for d in docs]))
    np.save(path.with_suffix(".npy"), np.asarray(vectors, dtype=np.float32))


def _peak_rss_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(description="run the upstream baseline over saved documents")
    parser.add_argument("--docs", required=True, help="path prefix of the .json documents and .npy vectors")
    parser.add_argument("--queries", required=True, help="JSON list of query strings")
    parser.add_argument("--no-spin", action="store_true",
                        help="the embedder's onnxruntime threads sleep between operators (see bench/inproc.py "
                             "alternating_runs)")
    args = parser.parse_args(argv)
    from image_composer_mcp.server.library.embed_local import LocalEmbedder

    prefix = Path(args.docs)
    docs = [UpstreamDoc(**d) for d in json.loads(prefix.with_suffix(".json").read_text())]
    vectors = np.load(prefix.with_suffix(".npy"))
    index = BaselineIndex(docs, vectors)
    loaded = time.perf_counter()
    embedder = LocalEmbedder(spin=not args.no_spin)
    queries: list[str] = json.loads(Path(args.queries).read_text())
    latencies: list[float] = []
    first_result_at = None
    for query in queries:
        t = time.perf_counter()
        index.search(query, embedder.embed_query(query))
        latencies.append((time.perf_counter() - t) * 1000)
        if first_result_at is None:
            first_result_at = time.time()  # wall clock: the parent compares it with its spawn time
    json.dump({"documents": len(docs), "load_s": round(loaded - started, 3), "first_result_at": first_result_at,
               "latencies_ms": latencies, "peak_rss_mb": _peak_rss_mb()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
