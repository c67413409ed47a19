"""The evaluation set (bench/eval/generation.yaml): big enough, split once, every entry checkable."""

from __future__ import annotations

from image_composer_mcp.server.composer.adherence import unmet

from bench.agent_bench import load_eval

KEYS = {"os", "dist", "arch", "type", "has", "lacks", "hostname", "size", "min_size", "mount", "no_mount", "cmdline",
        "immutable", "user", "artifact", "no_enable", "unsupported", "unchanged"}


def test_size_and_split():
    everything = load_eval()
    assert len(everything["requests"]) >= 80 and len(everything["refinements"]) >= 50
    for kind in ("requests", "refinements"):
        rows = everything[kind]
        # Split once by alternation in file order; both halves the same size (to one).
        assert [r["split"] for r in rows] == ["dev" if i % 2 == 0 else "test" for i in range(len(rows))]
        assert abs(len(load_eval("dev")[kind]) - len(load_eval("test")[kind])) <= 1


def test_every_entry_states_checkable_facts():
    for kind in ("requests", "refinements"):
        for row in load_eval()[kind]:
            assert row["want"] and set(row["want"]) <= KEYS, row
            unmet({}, row["want"])  # every key is one the adherence check understands
