"""The CLI's conversational commands: ``generate`` and ``chat`` (the ADR's ``ai "query"`` and ``--interactive``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core.config import AISettings

LAST_CONVERSATION = "last-conversation"
CHAT_HELP = ("Type a change ('add docker', 'set the disk to 8GiB'), a question ('what packages are included?'), "
             "'undo', or a command: /show, /save FILE, /history, /quit")


def add_commands(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    gen = sub.add_parser("generate", parents=parents, help="generate a template from a description",
                         description="Generate a validated, package-verified template. Piped without --json, "
                                     "the YAML goes to stdout and the explanation to stderr. Exit 1 when the "
                                     "result is not valid.")
    gen.add_argument("query", metavar="REQUEST", help="what the image is for, in plain words")
    gen.add_argument("-o", "--output", help="write the YAML to this file")
    gen.add_argument("--os", help="target OS, e.g. ubuntu, azure-linux")
    gen.add_argument("--dist", help="target distribution, e.g. ubuntu24, azl3")
    gen.add_argument("--arch", help="x86_64 or aarch64")
    gen.add_argument("--image-type", help="raw, iso or img")
    gen.add_argument("--save-as", metavar="FILE_NAME",
                     help="also save into the user templates directory (ai.save_dir), where search finds it")
    gen.add_argument("--overwrite", action="store_true", help="with --save-as: replace a file of that name")
    gen.add_argument("--conversation-id", help="your own id, to continue with `chat --conversation-id`")
    gen.add_argument("--provider", choices=["auto", "ollama", "openai", "offline"], help="override ai.provider")
    gen.add_argument("--json", action="store_true", help="machine-readable output")

    chat = sub.add_parser("chat", parents=parents, help="interactive generation and refinement",
                          description="Describe an image, then refine it turn by turn. " + CHAT_HELP)
    chat.add_argument("--continue", dest="resume", action="store_true", help="resume the last conversation")
    chat.add_argument("--conversation-id", help="resume this conversation")
    chat.add_argument("--provider", choices=["auto", "ollama", "openai", "offline"], help="override ai.provider")


def _engine_and_agent(settings: AISettings, args: argparse.Namespace) -> tuple[Any, Any]:
    from ..engine import build_engine

    if getattr(args, "provider", None):
        settings = settings.model_copy(update={"provider": args.provider})
    engine = build_engine(settings)
    engine.start()
    return engine, engine.agent


def _remember(engine: Any, conversation_id: str) -> None:
    if engine.cache_dir is not None:
        (engine.cache_dir / LAST_CONVERSATION).write_text(conversation_id, "utf-8")


def _recall(engine: Any) -> str | None:
    engine.ready()
    path = engine.cache_dir / LAST_CONVERSATION if engine.cache_dir else None
    return path.read_text("utf-8").strip() if path and path.is_file() else None


def _show(result: Any, *, rich: bool, stream: Any = None) -> None:
    stream = stream or sys.stdout
    if rich:
        from rich.console import Console
        from rich.panel import Panel
        from rich.syntax import Syntax

        console = Console(file=stream)
        if result.mode in ("refine", "revert") and result.diff:
            console.print(Syntax(result.diff, "diff", theme="ansi_dark"))
        elif result.mode == "generate":
            console.print(Syntax(result.yaml, "yaml", theme="ansi_dark"))
        style = "green" if result.valid else "red"
        title = f"revision {result.revision} · {result.provider} · {'valid' if result.valid else 'INVALID'}"
        console.print(Panel(result.answer or result.explanation, title=title, border_style=style))
        return
    print(f"[revision {result.revision}, {result.provider}, {'valid' if result.valid else 'INVALID'}]", file=stream)
    if result.mode in ("refine", "revert") and result.diff:
        print(result.diff, file=stream)
    print(result.answer or result.explanation, file=stream)


def output_problem(name: str) -> str | None:
    """Why ``-o name`` cannot be written, checked before the (slow) generation; None when it can."""
    path = Path(name).expanduser()
    if path.is_dir():
        return f"-o {name} is a directory; give a file name, e.g. {path / 'image.yml'}"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"-o {name}: directory {parent} does not exist"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"-o {name}: not writable (permission denied); choose another path"
    return None


def cmd_generate(settings: AISettings, args: argparse.Namespace) -> int:
    from ..agent.results import AgentError
    from ..llm.chat import LLMError

    problem = output_problem(args.output) if args.output else None
    if problem:
        print(f"mcp-server-image-composer: {problem}", file=sys.stderr)
        return 2
    engine, agent = _engine_and_agent(settings, args)
    try:
        result = asyncio.run(agent.generate(args.query, conversation_id=args.conversation_id, os=args.os,
                                            dist=args.dist, arch=args.arch, image_type=args.image_type,
                                            save_as=args.save_as, overwrite=args.overwrite))
        _remember(engine, result.conversation_id)
    except (AgentError, LLMError, ValueError, KeyError) as exc:
        print(f"mcp-server-image-composer: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    finally:
        engine.close()
    if args.json:
        from dataclasses import asdict

        print(json.dumps(asdict(result), indent=2))
    else:
        if args.output:
            try:
                Path(args.output).expanduser().write_text(result.yaml, "utf-8")
            except OSError as exc:
                print(f"mcp-server-image-composer: cannot write -o {args.output}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 2
        elif not sys.stdout.isatty():
            sys.stdout.write(result.yaml)
        _show(result, rich=sys.stdout.isatty() and not args.output,
              stream=sys.stdout if sys.stdout.isatty() else sys.stderr)
        if result.saved_to:
            print(f"saved to {result.saved_to} (indexed: search finds it)", file=sys.stderr)
        if args.output:
            print(f"wrote {args.output} (conversation {result.conversation_id}; continue with "
                  "`chat --continue`)", file=sys.stderr)
    return 0 if result.valid else 1


def cmd_chat(settings: AISettings, args: argparse.Namespace) -> int:
    from ..agent.conversations import ConversationNotFound
    from ..agent.results import AgentError
    from ..llm.chat import LLMError

    engine, agent = _engine_and_agent(settings, args)
    interactive = sys.stdin.isatty()
    rich = sys.stdout.isatty()
    conversation_id = args.conversation_id or (_recall(engine) if args.resume else None)
    if args.resume and not conversation_id:
        print("no earlier conversation to continue; describe a new image", file=sys.stderr)

    def ask(prompt: str) -> str | None:
        try:
            return input(prompt) if interactive else _read_line()
        except EOFError:
            return None

    try:
        if conversation_id:
            current = engine.conversations.get(conversation_id)
            print(f"continuing conversation {conversation_id} at revision {current.current_revision}")
        else:
            print("Describe the image you need (empty line or /quit to stop).")
        print(CHAT_HELP)
        while True:
            line = ask("> " if conversation_id else "describe> ")
            if line is None or line.strip() in ("/quit", "/exit", "/q"):
                break
            line = line.strip()
            if not line:
                if conversation_id:
                    continue
                break
            if line.startswith("/"):
                _chat_command(engine, conversation_id, line)
                continue
            try:
                if conversation_id is None:
                    result = asyncio.run(agent.generate(line))
                else:
                    result = asyncio.run(agent.refine(conversation_id, line))
            except (AgentError, LLMError, ValueError) as exc:
                print(f"error: {exc}")
                continue
            conversation_id = result.conversation_id
            _remember(engine, conversation_id)
            _show(result, rich=rich)
    except ConversationNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print()
    finally:
        engine.close()
    if conversation_id:
        print(f"conversation {conversation_id} saved; resume with `mcp-server-image-composer chat --continue`")
    return 0


def _read_line() -> str:
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _chat_command(engine: Any, conversation_id: str | None, line: str) -> None:
    command, _, arg = line.partition(" ")
    if conversation_id is None:
        print("no template yet: describe the image first")
        return
    conv = engine.conversations.get(conversation_id)
    if command == "/show":
        print(conv.current_yaml or "")
    elif command == "/save":
        if not arg:
            print("usage: /save FILE")
            return
        try:
            Path(arg).expanduser().write_text(conv.current_yaml or "", "utf-8")
        except OSError as exc:
            print(f"cannot write {arg}: {exc.strerror or exc}")
            return
        print(f"wrote {arg} (revision {conv.current_revision})")
    elif command == "/history":
        for rev in conv.revisions:
            marker = "*" if rev.revision == conv.current_revision else " "
            print(f"{marker} {rev.revision}: {rev.note} ({'valid' if rev.valid else 'invalid'})")
    else:
        print(CHAT_HELP)
