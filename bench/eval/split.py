"""Assign the dev/test split of a labelled search set, once.

    python -m bench.eval.split bench/eval/search-*.yaml

Within each query type, queries are ordered by the SHA-1 of their text and alternate dev, test, dev, ...
so both halves hold every type. The split is written into each line (``split: dev``) and lines that
already carry one are left alone: re-running never moves a query between halves.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import defaultdict
from pathlib import Path

_LINE = re.compile(r'^- \{query: "(?P<query>[^"]+)", type: (?P<type>[\w-]+),')


def assign(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    by_type: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if m and "split:" not in line:
            by_type[m["type"]].append((hashlib.sha1(m["query"].encode()).hexdigest(), i))
    changed = 0
    for items in by_type.values():
        for n, (_, i) in enumerate(sorted(items)):
            lines[i] = lines[i][:-1].rstrip() + f", split: {'dev' if n % 2 == 0 else 'test'}}}"
            changed += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {assign(Path(arg))} queries assigned", file=sys.stderr)
