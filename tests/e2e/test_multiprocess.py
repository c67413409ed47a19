"""Several server processes sharing one cache directory: no lost or duplicated rows, no corruption."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, write_template


def _index(templates: Path, cache: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, OIC_AI_TEMPLATES_DIR=str(templates), OIC_AI_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, "-m", "image_composer_mcp", "index", "--json"], cwd=str(REPO), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_three_processes_index_one_cache_dir_at_once(tmp_path: Path):
    templates = tmp_path / "templates"
    templates.mkdir()
    for i in range(12):
        write_template(templates, f"tpl-{i:02d}", f"template number {i} for testing", f"kw{i}")
    cache = tmp_path / "cache"
    procs = [_index(templates, cache) for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert json.loads(out)["templates_indexed"] == 12
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    table = lancedb.connect(str(cache / "index.lance")).open_table("templates")
    uids = [r["uid"] for r in table.search().select(["uid"]).limit(1000).to_list()]
    assert len(uids) == 12 and len(set(uids)) == 12  # upserts, never duplicates

    # a later process finds everything cached, and sees an edit made while the others were gone
    write_template(templates, "tpl-99", "added later", "late")
    out, err = _index(templates, cache).communicate(timeout=300)
    summary = json.loads(out)
    assert summary["templates_indexed"] == 13 and summary["embedded"] == 1 and summary["cache_hits"] == 12
