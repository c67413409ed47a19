"""The commands that use the engine from a terminal or a script: search, index, validate, verify-packages, cache.

Each is ``_cmd_x(settings, args) -> int`` (an exit code, cli_output.py); cli.py parses the arguments and
dispatches.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.config import AISettings
from .cli_output import (
    EXIT_NO,
    EXIT_OK,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    Output,
    error,
    flatten,
    load_engine,
    progress_wanted,
)

TEMPLATE_SUFFIXES = (".yml", ".yaml")


def cmd_search(settings: AISettings, args: argparse.Namespace) -> int:
    from ...tools.search import to_model, to_text
    from ..engine import build_engine

    out = Output(args)
    engine = build_engine(settings)
    try:
        load_engine(engine, out)
        outcome = engine.search(args.query, args.top_k, os=args.os, dist=args.dist, arch=args.arch,
                                image_type=args.image_type)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    finally:
        engine.close()
    model = to_model(outcome)
    if out.json:
        out.data(model.model_dump(mode="json"))
    elif not out.rich:
        out.text(to_text(model))
    else:
        from rich.table import Table

        table = Table(title=f"{args.query}  [{model.query_type}]")
        for col in ("#", "template", "target", "score", "sem", "kw", "pkg", "notes"):
            table.add_column(col)
        for i, hit in enumerate(model.results, 1):
            table.add_row(str(i), hit.name, f"{hit.dist} {hit.arch} {hit.image_type}", f"{hit.score:.2f}",
                          f"{hit.scores.semantic:.2f}", f"{hit.scores.keyword:.2f}", f"{hit.scores.package:.2f}",
                          "; ".join(hit.penalties))
        for notice in model.notices:
            out.console.print(f"[yellow]note:[/] {notice}")
        out.console.print(table if model.results else model.message)
    return EXIT_OK


def cmd_index(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import build_engine

    out = Output(args)
    engine = build_engine(settings)
    try:
        load_engine(engine, out)
        report = engine.first_sync
        if args.force:
            if progress_wanted(out):
                from rich.console import Console
                from rich.progress import Progress

                with Progress(console=Console(stderr=True), transient=True) as progress:
                    task = progress.add_task("embedding templates", total=None)
                    report = engine.reindex(force=True, progress=lambda done, total, name: progress.update(
                        task, completed=done, total=total, description=f"embedding {name}"))
            else:
                report = engine.reindex(force=True)
        stats = engine.stats()
    finally:
        engine.close()
    assert report is not None
    summary = {"scanned": report.scanned, "embedded": report.embedded, "cache_hits": report.hits,
               "removed": report.removed, "skipped": [{"path": p.path, "reason": p.message} for p in report.problems],
               "seconds": round(report.seconds, 3), "templates_indexed": stats["templates_indexed"],
               "index_location": stats["index_location"], "model_id": stats["model_id"]}
    if not summary["templates_indexed"]:
        error(engine.library_empty_message())
        if out.json:
            out.data(summary)
        return EXIT_USAGE
    if out.json:
        out.data(summary)
    else:
        out.text(f"{summary['templates_indexed']} templates indexed at {summary['index_location']} "
                 f"({report.embedded} embedded, {report.hits} from cache, {report.removed} removed, "
                 f"{len(report.problems)} skipped) in {report.seconds:.2f}s")
        for p in report.problems:
            out.text(f"  skipped {p.path}: {p.message}")
    return EXIT_OK


def _template_files(names: list[str]) -> tuple[list[Path | None], list[str]]:
    """Expand FILE arguments: directories to their templates, '-' to stdin (None). Also returns problems."""
    files: list[Path | None] = []
    problems: list[str] = []
    for name in names:
        if name == "-":
            files.append(None)
            continue
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in TEMPLATE_SUFFIXES and p.is_file())
            if not found:
                problems.append(f"{name}: no *.yml or *.yaml files in this directory")
            files.extend(found)
        else:
            files.append(path)
    return files, problems


def _read(path: Path | None) -> bytes:
    return sys.stdin.buffer.read() if path is None else path.read_bytes()


def cmd_validate(settings: AISettings, args: argparse.Namespace) -> int:
    from ..validation.validator import validate_text

    del settings  # validation needs no index or model
    out = Output(args)
    files, problems = _template_files(args.files)
    results: list[dict[str, Any]] = []
    for path in files:
        label = "<stdin>" if path is None else str(path)
        try:
            raw = _read(path)
        except OSError as exc:
            problems.append(f"{label}: cannot read: {exc.strerror or exc}")
            continue
        report = validate_text(raw, base_dir=(path.parent if path is not None else Path.cwd()))
        ok = report.valid and not (args.strict and report.warnings)
        results.append({"file": label, "valid": ok, "error_count": len(report.errors),
                        "warning_count": len(report.warnings),
                        "errors": [i.to_dict() for i in report.errors],
                        "warnings": [i.to_dict() for i in report.warnings]})
    all_valid = bool(results) and all(r["valid"] for r in results) and not problems
    if out.json:
        out.data({"valid": all_valid, "files": results, "problems": problems})
    elif out.rich:
        _print_validation_rich(out, results)
    else:
        for r in results:
            for sev in ("errors", "warnings"):
                for issue in r[sev]:
                    where = f"{issue['line']}:{issue['column']}:" if issue["line"] else ""
                    hint = f" (hint: {issue['hint']})" if issue["hint"] else ""
                    out.text(f"{r['file']}:{where} {issue['severity']}: {issue['path']}: {issue['message']}"
                             f" [{issue['code']}]{hint}")
            out.text(f"{r['file']}: {'valid' if r['valid'] else 'INVALID'} "
                     f"({r['error_count']} error(s), {r['warning_count']} warning(s))")
    for p in problems:
        error(p)
    if problems:
        return EXIT_USAGE
    return EXIT_OK if all_valid else EXIT_NO


def _print_validation_rich(out: Output, results: list[dict[str, Any]]) -> None:
    from rich.table import Table
    from rich.text import Text

    for r in results:
        mark = Text()
        mark.append("✓ " if r["valid"] else "✗ ", style="bold green" if r["valid"] else "bold red")
        mark.append(r["file"], style="bold")
        mark.append(f"  {r['error_count']} error(s), {r['warning_count']} warning(s)")
        out.console.print(mark)
        issues = r["errors"] + r["warnings"]
        if not issues:
            continue
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
        for col in ("", "line", "path", "problem", "hint"):
            table.add_column(col, overflow="fold")
        for issue in issues:
            style = "red" if issue["severity"] == "error" else "yellow"
            where = f"{issue['line']}:{issue['column']}" if issue["line"] else ""
            table.add_row(Text(issue["severity"], style=style), where, issue["path"], issue["message"],
                          issue["hint"] or "")
        out.console.print(table)


def cmd_verify_packages(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import build_engine

    out = Output(args)
    names = [n.strip() for item in args.package for n in item.split(",") if n.strip()]
    files, problems = _template_files(args.files)
    if not files and not names:
        error("give template FILEs or packages with -p NAME (and --dist/--arch)")
        return EXIT_USAGE
    jobs: list[tuple[str, dict[str, Any]]] = []
    for path in files:
        label = "<stdin>" if path is None else str(path)
        try:
            jobs.append((label, {"yaml": _read(path).decode("utf-8", "replace"), "packages": names or None}))
        except OSError as exc:
            problems.append(f"{label}: cannot read: {exc.strerror or exc}")
    if not files:
        jobs.append(("packages", {"packages": names}))
    engine = build_engine(settings)
    results: list[dict[str, Any]] = []
    try:
        load_engine(engine, out)
        for label, kwargs in jobs:
            try:
                if out.rich:
                    with out.console.status(f"checking {label} against the repository indexes"):
                        res = engine.verify_packages(os=args.os, dist=args.dist, arch=args.arch, **kwargs)
                else:
                    res = engine.verify_packages(os=args.os, dist=args.dist, arch=args.arch, **kwargs)
            except ValueError as exc:
                problems.append(f"{label}: {exc}")
                continue
            results.append({"file": label, **res.to_dict()})
    finally:
        engine.close()
    missing = any(r["missing"] for r in results)
    unknown = any(not r.get("complete", r["verified"]) for r in results)
    if out.json:
        out.data({"ok": bool(results) and not missing and not unknown and not problems, "results": results,
                  "problems": problems})
    else:
        for r in results:
            _print_verify(out, r)
    for p in problems:
        error(p)
    if problems:
        return EXIT_USAGE
    if missing:
        return EXIT_NO
    return EXIT_UNKNOWN if unknown else EXIT_OK


def _print_verify(out: Output, r: dict[str, Any]) -> None:
    head = f"{r['file']} ({r['dist']}/{r['arch']}): {r['message']}"
    if not out.rich:
        out.text(head)
        for name in r["missing"]:
            alt = r["suggestions"].get(name)
            out.text(f"  missing: {name}" + (f" (try: {', '.join(alt)})" if alt else ""))
        for name in r["unchecked"]:
            out.text(f"  unchecked: {name}")
        for s in r["sources"]:
            if not s["ok"]:
                out.text(f"  source failed: {s['source']}: {s['error']}")
        return
    from rich.table import Table

    out.console.print(head, style="bold")
    if r["missing"] or r["unchecked"]:
        table = Table(box=None, padding=(0, 1))
        for col in ("package", "status", "suggestions"):
            table.add_column(col)
        for name in r["missing"]:
            table.add_row(name, "[red]missing[/]", ", ".join(r["suggestions"].get(name, [])))
        for name in r["unchecked"]:
            table.add_row(name, "[yellow]unchecked[/]", "")
        out.console.print(table)
    for s in r["sources"]:
        if not s["ok"]:
            out.console.print(f"  [yellow]source failed[/] {s['source']}: {s['error']}")


def cmd_cache(settings: AISettings, args: argparse.Namespace) -> int:
    return _cache_stats(settings, args) if args.cache_command == "stats" else _cache_clear(settings, args)


def _cache_stats(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import build_engine

    out = Output(args)
    engine = build_engine(settings)
    try:
        load_engine(engine, out)
        stats = engine.stats()
    finally:
        engine.close()
    if out.json:
        out.data(stats)
        return EXIT_OK
    rows = list(flatten(stats))
    if out.rich:
        from rich.table import Table

        table = Table(title="cache stats", show_header=False)
        table.add_column("key", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in rows:
            table.add_row(key, value)
        out.console.print(table)
    else:
        for key, value in rows:
            out.text(f"{key}: {value}")
    return EXIT_OK


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _cache_clear(settings: AISettings, args: argparse.Namespace) -> int:
    import shutil

    out = Output(args)
    root = settings.cache_path
    everything = not (args.index or args.packages)
    # Only our own entries are deleted, never the cache directory itself (it may be shared or be $HOME).
    # The index goes as a folder, not through LanceDB: a corrupt index cannot be opened to be dropped.
    targets = []
    if everything or args.index:
        from ..library import label_cache
        from ..library.index import INDEX_DIR

        targets.append(("index", root / INDEX_DIR))
        targets.append(("concept label vectors", root / label_cache.FILE))
    if everything or args.packages:
        targets.append(("packages", root / "packages"))
    removed: list[dict[str, Any]] = []
    for what, path in targets:
        if not path.exists():
            continue
        size = _tree_size(path)
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError as exc:
            error(f"cannot delete {path}: {exc.strerror or exc}")
            return EXIT_USAGE
        removed.append({"what": what, "path": str(path), "bytes": size})
    if out.json:
        out.data({"cache_dir": str(root), "removed": removed})
    elif not removed:
        out.text(f"nothing to clear in {root}")
    else:
        for r in removed:
            out.text(f"removed {r['what']}: {r['path']} ({r['bytes'] / 1024:.0f} KiB)")
        if any(r["what"] == "index" for r in removed):
            out.text("the index is rebuilt (templates re-embedded) on next use")
    return EXIT_OK
