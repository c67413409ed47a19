"""The README's table of bundled templates, generated from image-templates/ (``make docs`` rewrites it)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from image_composer_mcp.server.core.config import BUNDLED_TEMPLATES
from image_composer_mcp.server.library.templates import load_record, scan_files

PACKAGE_ROOT = Path(__file__).resolve().parents[1]

START = "<!-- library-table:start -->"
END = "<!-- library-table:end -->"


def library_table(root: Path = BUNDLED_TEMPLATES) -> str:
    rows = ["| template | OS / dist | arch | type | use case |", "|---|---|---|---|---|"]
    for _root, path, _fp in scan_files([root]):
        rec = load_record(root, path)
        use = rec.use_case or (rec.use_cases[0] if rec.use_cases else "")
        rows.append(f"| [{rec.name}](image-templates/{rec.id}) | {rec.os} / {rec.dist} | {rec.arch} | "
                    f"{rec.image_type} | {use} |")
    return "\n".join(rows)


def render(readme: str, table: str) -> str:
    block = f"{START}\n{table}\n{END}"
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README has no {START} ... {END} markers")
    return pattern.sub(lambda _m: block, readme)


def main() -> int:
    readme = PACKAGE_ROOT / "README.md"
    updated = render(readme.read_text("utf-8"), library_table())
    readme.write_text(updated, "utf-8")
    print(f"updated the template table in {readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
