"""The evaluation set (bench/eval/generation.yaml): big enough, split once, every entry checkable."""

from __future__ import annotations

from image_composer_mcp.server.composer.adherence import unmet

from bench.agent_bench import load_eval

KEYS = {"os", "dist", "arch", "type", "has", "lacks", "hostname", "size", "min_size", "mount", "no_mount", "cmdline",
        "immutable", "user", "artifact", "no_enable", "unsupported", "unchanged", "sized", "config_has", "opened",
        "addressed"}


def test_size_and_split():
    everything = load_eval()
    assert len(everything["requests"]) >= 80 and len(everything["refinements"]) >= 50
    for kind in ("requests", "refinements"):
        rows = everything[kind]
        # Split once by alternation in file order within each batch (written at one time, before any tuning on
        # it); each half holds half a batch (to one).
        for batch in {r.get("batch", 1) for r in rows}:
            split = [r["split"] for r in rows if r.get("batch", 1) == batch]
            assert split == ["dev" if i % 2 == 0 else "test" for i in range(len(split))], (kind, batch)
        assert abs(len(load_eval("dev")[kind]) - len(load_eval("test")[kind])) <= 2


def test_every_entry_states_checkable_facts():
    for kind in ("requests", "refinements"):
        for row in load_eval()[kind]:
            assert row["want"] and set(row["want"]) <= KEYS, row
            unmet({}, row["want"])  # every key is one the adherence check understands


def test_a_partitions_size_and_a_commands_text_are_checked():
    doc = {"disk": {"size": "6658MiB", "partitions": [
        {"id": "esp", "mountPoint": "/boot/efi", "start": "1MiB", "end": "513MiB"},
        {"id": "rootfs", "mountPoint": "/", "start": "513MiB", "end": "0"}]},
        "systemConfig": {"configurations": [{"cmd": "printf 'PasswordAuthentication no' > x.conf"}]}}
    assert unmet(doc, {"sized": {"/": "6GiB", "/boot/efi": "512MiB"}, "config_has": ["PasswordAuthentication no"]}) == []
    assert unmet(doc, {"sized": {"/": "8GiB", "/srv": "1GiB"}, "config_has": ["PermitRootLogin no"]}) == [
        "partition / is 6144 MiB, wanted 8GiB", "partition /srv is missing, wanted 1GiB",
        "no configuration command with `PermitRootLogin no`"]
