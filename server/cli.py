"""Command line: serve MCP (default), or use the same engine from a terminal or a script."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from server.config import ConfigError, load_settings  # noqa: E402
from server.logs import setup_logging  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="config.yaml path (default: $OIC_AI_CONFIG or ./config.yaml)")
    common.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=None)
    common.add_argument("--log-format", choices=["text", "json"], default=None)
    common.add_argument("--templates-dir", default=None,
                        help=f"template directories, separated by '{os.pathsep}' (default: bundled image-templates)")
    common.add_argument("--cache-dir", default=None, help="where the index lives (default ./.ai-cache)")

    parser = argparse.ArgumentParser(
        prog="mcp-server-image-composer", parents=[common],
        description="MCP server for OS Image Composer templates. Without a command it serves MCP.",
    )
    parser.add_argument("--transport", choices=["stdio", "sse", "streamable-http"], default=None)
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", parents=[common], help="serve MCP (the default)")
    search = sub.add_parser("search", parents=[common], help="search templates")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--os")
    search.add_argument("--dist")
    search.add_argument("--arch")
    search.add_argument("--image-type")
    search.add_argument("--json", action="store_true", help="machine-readable output")
    index = sub.add_parser("index", parents=[common], help="build or refresh the index")
    index.add_argument("--force", action="store_true", help="re-embed every template")
    index.add_argument("--json", action="store_true")
    return parser


def _settings(args: argparse.Namespace) -> Any:
    overrides = {
        "templates_dir": args.templates_dir,
        "cache.dir": args.cache_dir,
        "server.log_level": args.log_level,
        "server.log_format": args.log_format,
        "server.transport": getattr(args, "transport", None),
        "server.host": getattr(args, "host", None),
        "server.port": getattr(args, "port", None),
    }
    return load_settings(args.config, overrides=overrides)


def _cmd_search(settings: Any, args: argparse.Namespace) -> int:
    from server.engine import Engine
    from tools.search import to_model, to_text

    engine = Engine(settings)
    try:
        outcome = engine.search(args.query, args.top_k, os=args.os, dist=args.dist, arch=args.arch,
                                image_type=args.image_type)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.close()
    model = to_model(outcome)
    if args.json or not sys.stdout.isatty():
        print(model.model_dump_json(indent=2) if args.json else to_text(model))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{args.query}  [{model.query_type}]")
    for col in ("#", "template", "target", "score", "sem", "kw", "pkg", "notes"):
        table.add_column(col)
    for i, hit in enumerate(model.results, 1):
        table.add_row(str(i), hit.name, f"{hit.dist} {hit.arch} {hit.image_type}", f"{hit.score:.2f}",
                      f"{hit.scores.semantic:.2f}", f"{hit.scores.keyword:.2f}", f"{hit.scores.package:.2f}",
                      "; ".join(hit.penalties))
    console = Console()
    console.print(table if model.results else model.message)
    return 0


def _cmd_index(settings: Any, args: argparse.Namespace) -> int:
    from server.engine import Engine

    engine = Engine(settings)
    interactive = sys.stderr.isatty() and not args.json
    try:
        if interactive:
            from rich.progress import Progress

            with Progress(transient=True) as progress:
                task = progress.add_task("embedding templates", total=None)

                def on_progress(done: int, total: int, name: str) -> None:
                    progress.update(task, completed=done, total=total, description=f"embedding {name}")

                engine.start(progress=on_progress)
                engine.ready()
                report = engine.first_sync
                if args.force:
                    report = engine.reindex(progress=on_progress, force=True)
        else:
            engine.ready()
            report = engine.reindex(force=True) if args.force else engine.first_sync
        stats = engine.stats()
    finally:
        engine.close()
    assert report is not None
    summary = {"scanned": report.scanned, "embedded": report.embedded, "cache_hits": report.hits,
               "removed": report.removed, "skipped": [{"path": p.path, "reason": p.message} for p in report.problems],
               "seconds": round(report.seconds, 3), "templates_indexed": stats["templates_indexed"],
               "index_location": stats["index_location"], "model_id": stats["model_id"]}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['templates_indexed']} templates indexed at {summary['index_location']} "
              f"({report.embedded} embedded, {report.hits} from cache, {report.removed} removed, "
              f"{len(report.problems)} skipped) in {report.seconds:.2f}s")
        for p in report.problems:
            print(f"  skipped {p.path}: {p.message}")
    return 0


def _serve(settings: Any) -> int:
    from server.app import create_app

    mcp = create_app(settings)
    transport = settings.server.transport
    if transport == "stdio":
        mcp.run()
    else:
        mcp.run(transport=transport, host=settings.server.host, port=settings.server.port)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ConfigError as exc:
        print(f"mcp-server-image-composer: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.server.log_level if args.command in (None, "serve") else (args.log_level or "WARNING"),
                  settings.server.log_format)
    if args.command == "search":
        return _cmd_search(settings, args)
    if args.command == "index":
        return _cmd_index(settings, args)
    return _serve(settings)


if __name__ == "__main__":
    sys.exit(main())
