"""The ranking's array arithmetic against the Python it replaced: rounding, order, and who is kept."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from image_composer_mcp.server.library.ranking import (
    BM25_SHARE,
    STRONG_EVIDENCE,
    Ranked,
    exact_round,
    name_ranks,
)
from image_composer_mcp.server.library.templates import TemplateRecord


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _hard_values(rng: np.random.Generator) -> np.ndarray:
    """Values where rounding to 4 places is hard: halves at the 5th place written in decimal (binary makes
    them a hair above or below), their neighbours one ulp away, and ordinary values of every sign and size
    a score, share, cosine or BM25 takes."""
    halves = (np.arange(-30_000, 30_000) + 0.5) / 10_000
    steps = np.concatenate([np.nextafter(halves, np.inf), np.nextafter(halves, -np.inf)])
    ordinary = np.concatenate([rng.uniform(-1, 1, 50_000), rng.uniform(0, 40, 50_000), rng.random(20_000) * 1e-5])
    specials = np.array([0.0, -0.0, 2.675, 1.00005, 0.00005, -0.00005, 0.12345, 1e-300])
    return np.concatenate([halves, steps, ordinary, specials])


def test_exact_round_is_pythons_round_bit_for_bit() -> None:
    values = _hard_values(np.random.default_rng(3))
    python = [_bits(round(v, 4)) for v in values.tolist()]
    assert [_bits(v) for v in exact_round(values).tolist()] == python
    # numpy's round differs on these values, so the test can tell.
    assert sum(a != b for a, b in zip((_bits(v) for v in np.round(values, 4).tolist()), python, strict=True)) > 100


def test_exact_round_of_values_too_large_to_scale() -> None:
    values = np.array([1e306, -1e306, 1.7976931348623157e308, 1e300, 3e15, 123456.78905, 0.12345, 2.675])
    assert [_bits(v) for v in exact_round(values).tolist()] == [_bits(round(v, 4)) for v in values.tolist()]


def test_exact_round_keeps_nan_and_infinities() -> None:
    out = exact_round(np.array([math.nan, math.inf, -math.inf, 0.123456]))
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf and out[3] == 0.1235


def test_name_ranks_sort_as_the_names_do() -> None:
    names = ["b", "a", "b", "A", "ä", "a-1", ""]
    ranks = name_ranks(names)
    assert sorted(range(len(names)), key=lambda i: (ranks[i], i)) == sorted(range(len(names)), key=lambda i: (names[i], i))
    assert ranks[0] == ranks[2]  # equal names tie


def _record(name: str) -> TemplateRecord:
    return TemplateRecord(id=f"{name}.yml", root="r", name=name, image_name=name, content_hash="", size=0, mtime_ns=0)


@pytest.mark.parametrize("seed", range(5))
def test_order_is_rounded_score_then_name_then_candidate_order(seed: int) -> None:
    """As ``sorted(range(n), key=lambda i: (-round(score[i], 4), name[i]))`` ordered candidates before: scores
    that differ past the 4th place tie, then the name decides, then the candidates' own order."""
    rng = np.random.default_rng(seed)
    n = 300
    score = np.round(rng.random(n), 3) + rng.choice([0.0, 1e-6, -1e-6, 4e-5], n)
    names = [f"t{int(k)}" for k in rng.integers(0, 40, n)]
    records = [_record(name) for name in names]
    zeros = np.zeros(n)
    ranked = Ranked.of(score, records, (zeros, zeros, zeros, zeros, zeros), np.zeros(n, bool), np.zeros(n, bool),
                       lambda shown: [])
    assert ranked.order == sorted(range(n), key=lambda i: (-round(float(score[i]), 4), names[i]))
    given = Ranked.of(score, records, (zeros, zeros, zeros, zeros, zeros), np.zeros(n, bool), np.zeros(n, bool),
                      lambda shown: [], name_ranks(names))
    assert given.order == ranked.order


@pytest.mark.parametrize("packages", [[], ["docker"]])
def test_kept_is_the_one_candidate_rule_for_every_candidate(packages: list[str]) -> None:
    """Who is shown: a score at the threshold or above, or, with no penalty, most named packages installed
    (with a semantic share above 0) or most of the query's words present; on the rounded shares."""
    rng = np.random.default_rng(11)
    n = 2_000
    grid = np.array([0.0, 0.00004, 0.00005, 0.3, STRONG_EVIDENCE - 0.00005, STRONG_EVIDENCE,
                     STRONG_EVIDENCE + BM25_SHARE - 0.00005, STRONG_EVIDENCE + BM25_SHARE, 0.9])
    semantic, keyword, package = (rng.choice(grid, n) for _ in range(3))
    score = rng.choice(grid, n)
    worded, penalised = rng.random(n) < 0.5, rng.random(n) < 0.3
    records = [_record(f"t{i:04d}") for i in range(n)]
    ranked = Ranked.of(score, records, (semantic, keyword, package, semantic, keyword), worded, penalised,
                       lambda shown: [])
    threshold = 0.3

    # The rule as one candidate's code wrote it, on Python floats (numpy's own round differs: see above).
    sem, kw, pkg, total = semantic.tolist(), keyword.tolist(), package.tolist(), score.tolist()

    def strong(i: int) -> bool:
        if packages and round(pkg[i], 4) >= STRONG_EVIDENCE and round(sem[i], 4) > 0:
            return True
        return bool(worded[i]) and round(kw[i], 4) >= STRONG_EVIDENCE + BM25_SHARE

    expected = [i for i in ranked.order if round(total[i], 4) >= threshold or (not penalised[i] and strong(i))]
    kept = ranked.kept(threshold, bool(packages))
    assert kept == expected
    assert 0 < len(kept) < n  # both sides of the rule were taken
    assert ranked.kept(0.0, bool(packages)) == ranked.order


def test_a_query_about_a_robot_arm_asks_for_no_architecture():
    from image_composer_mcp.server.library.query_analysis import QueryAnalyzer

    assert "arch" not in QueryAnalyzer._wants(["ros", "jazzy", "robot", "arm"])
    assert QueryAnalyzer._wants(["edge", "gateway", "arm", "azure"])["arch"] == "aarch64"
