"""Generation and refinement figures for the offline provider, and validation/verification timings.

Runs inside ``make bench`` (bench.run calls :func:`run`) or alone: ``python -m bench.agent_bench``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from image_composer_mcp.server.composer.adherence import reported, unmet, unmet_reply
from image_composer_mcp.server.core.config import load_settings
from image_composer_mcp.server.core.yamlsafe import YamlError, load_mapping, parse_yaml

from bench import REPO_ROOT as PACKAGE_ROOT
from bench import reference_checkout

if TYPE_CHECKING:
    from image_composer_mcp.server.agent.loop import Agent
    from image_composer_mcp.server.agent.planned_spec import PlannedSpec

DATA = PACKAGE_ROOT / "tests" / "data"
EVAL = PACKAGE_ROOT / "bench" / "eval" / "generation.yaml"
REFERENCE = reference_checkout() / "image-templates"


def upstream_accepts(text: str) -> bool:
    """os-image-composer's own schema file (unchanged) accepts the YAML: counted apart from our validator."""
    from image_composer_mcp.server.validation.upstream import upstream_errors

    try:
        data = load_mapping(text).data
    except YamlError:
        return False
    return not upstream_errors(data)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) if ordered else 0.0


async def _agent_figures(cache: Path) -> dict[str, Any]:
    from image_composer_mcp.server.transport.app import create_app
    from mcp import Client

    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(cache), "OIC_AI_PROVIDER": "offline"},
                             overrides={"packages.offline": True})
    requests = parse_yaml((DATA / "requests.yaml").read_bytes()).data
    refinements = parse_yaml((DATA / "refinements.yaml").read_bytes()).data
    out: dict[str, Any] = {}
    async with Client(create_app(settings)) as client:
        await client.call_tool("search_templates", {"query": "warm up"})
        valid = adherent = upstream = 0
        latencies: list[float] = []
        failures: list[dict[str, Any]] = []
        for row in requests:
            started = time.perf_counter()
            r = await client.call_tool("generate_template", {"request": row["request"]})
            latencies.append((time.perf_counter() - started) * 1000)
            data = r.structured_content or {}
            ok = bool(data.get("valid"))
            problems = unmet(load_mapping(data["yaml"]).data, row["want"]) if ok else ["invalid"]
            valid += ok
            upstream += upstream_accepts(data.get("yaml") or "")
            adherent += ok and not problems
            if problems:
                failures.append({"request": row["request"], "problems": problems})
        out["generation"] = {"requests": len(requests), "valid_rate": round(valid / len(requests), 4),
                             "upstream_valid_rate": round(upstream / len(requests), 4),
                             "constraint_adherence": round(adherent / len(requests), 4),
                             "latency_ms_p50": _pct(latencies, 0.5), "latency_ms_p95": _pct(latencies, 0.95),
                             "failures": failures}
        ok_count = ref_upstream = 0
        ref_lat: list[float] = []
        ref_fail: list[dict[str, Any]] = []
        for row in refinements:
            gen = (await client.call_tool("generate_template", {"request": row["start"]})).structured_content
            started = time.perf_counter()
            r = await client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                           "instruction": row["instruction"]})
            ref_lat.append((time.perf_counter() - started) * 1000)
            data = r.structured_content or {}
            problems = unmet(load_mapping(data["yaml"]).data, row["want"]) if data.get("valid") else ["invalid"]
            ok_count += not problems
            ref_upstream += upstream_accepts(data.get("yaml") or "")
            if problems:
                ref_fail.append({"instruction": row["instruction"], "problems": problems})
        out["refinement"] = {"instructions": len(refinements), "success_rate": round(ok_count / len(refinements), 4),
                             "upstream_valid_rate": round(ref_upstream / len(refinements), 4),
                             "latency_ms_p50": _pct(ref_lat, 0.5), "latency_ms_p95": _pct(ref_lat, 0.95),
                             "failures": ref_fail}
    return out


def load_eval(split: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The evaluation set (bench/eval/generation.yaml), optionally one split (dev or test)."""
    data = parse_yaml(EVAL.read_bytes()).data
    return {kind: [row for row in data[kind] if split is None or row["split"] == split]
            for kind in ("requests", "refinements")}


def template_misses(doc: Any, valid: bool, want: dict[str, Any]) -> list[str]:
    """The evaluation's verdict on a template: "invalid", or the wanted facts it misses (the run-time check)."""
    return unmet(doc, want) if valid and isinstance(doc, dict) else ["invalid"]


# Judges a model's own spec for a request against the wanted facts: (request, spec, want) -> misses.
SpecJudge = Callable[[str, "PlannedSpec", dict[str, Any]], Awaitable[list[str]]]


def judge_spec(agent: Agent, request: str, plan: PlannedSpec, want: dict[str, Any]) -> list[str]:
    """What the model's spec misses on its own: composed without the rules' parse by the offline composer on
    its own grounding, and judged like every answer of the evaluation (:func:`template_misses`)."""
    from image_composer_mcp.server.agent.spec_plan import spec_from_plan
    from image_composer_mcp.server.knowledge.loader import load_capabilities

    spec = spec_from_plan(plan, load_capabilities())
    spec.arch = spec.arch or "x86_64"  # the default target, as for the rules' parse (Agent.understand)
    draft = agent.compose_spec(request, spec)
    return template_misses(draft.report.data, draft.report.valid, want)


async def eval_split(client: Any, split: str, judge: SpecJudge | None = None) -> dict[str, Any]:
    """One half of the evaluation set over MCP: fully-right rates and whether every miss was reported. With
    ``judge``, each request the model planned (plan mode) also gets the model's spec judged on its own."""
    from image_composer_mcp.server.agent.planned_spec import PlannedSpec

    rows = load_eval(split)
    figures: dict[str, Any] = {}
    for kind in ("requests", "refinements"):
        right = misses = reported_misses = 0
        planned = plan_right = planned_merged_right = 0
        failures: list[dict[str, Any]] = []
        plan_failures: list[dict[str, Any]] = []
        providers: dict[str, int] = {}  # who produced each answer, e.g. "openai+composer" when a plan was used
        for row in rows[kind]:
            previous = None
            if kind == "refinements":
                gen = (await client.call_tool("generate_template", {"request": row["start"]})).structured_content
                previous = gen["revision"]
                r = await client.call_tool("refine_template", {"conversation_id": gen["conversation_id"],
                                                               "instruction": row["instruction"]})
            else:
                r = await client.call_tool("generate_template", {"request": row["request"]})
            reply = r.structured_content or {}
            providers[str(reply.get("provider", "error"))] = providers.get(str(reply.get("provider", "error")), 0) + 1
            if r.is_error or "yaml" not in reply:
                problems = [f"error: {r.content[0].text if r.content else '?'}"]
            else:
                problems = template_misses(load_mapping(reply["yaml"]).data, bool(reply.get("valid")), row["want"])
                problems += unmet_reply(reply, row["want"], previous_revision=previous)
            right += not problems
            if judge is not None and kind == "requests" and reply.get("plan"):
                own = await judge(row["request"], PlannedSpec.model_validate(reply["plan"]), row["want"])
                planned += 1
                plan_right += not own
                planned_merged_right += not problems
                if own:
                    plan_failures.append({"text": row["request"], "problems": own, "plan": reply["plan"]})
            if problems:
                misses += 1
                told = reported(reply)
                reported_misses += told
                failures.append({"text": row.get("request") or row.get("instruction"), "problems": problems,
                                 "reported": told})
        n = len(rows[kind])
        figures[kind] = {"count": n, "fully_right": round(right / n, 4) if n else 0.0, "right": right,
                         "misses": misses, "reported": reported_misses,
                         "misses_reported": round(reported_misses / misses, 4) if misses else 1.0,
                         "failures": failures, "providers": providers}
        if judge is not None and kind == "requests":
            figures[kind] |= {"planned": planned, "plan_right": plan_right,
                              "planned_merged_right": planned_merged_right, "plan_failures": plan_failures}
    return figures


async def _eval_figures(cache: Path, splits: tuple[str, ...] = ("dev", "test"),
                        overrides: dict[str, Any] | None = None, judge_plans: bool = False) -> dict[str, Any]:
    """The evaluation set over MCP; offline by default, any provider through ``overrides``. ``judge_plans``:
    also judge each model spec on its own (:func:`judge_spec`) with the serving engine's agent."""
    import anyio
    from image_composer_mcp.server.engine import build_engine
    from image_composer_mcp.server.transport.app import create_app
    from mcp import Client

    settings = load_settings(env={"OIC_AI_CACHE_DIR": str(cache), "OIC_AI_PROVIDER": "offline"},
                             overrides={"packages.offline": True, **(overrides or {})})
    engine = build_engine(settings)

    async def judge(request: str, plan: PlannedSpec, want: dict[str, Any]) -> list[str]:
        return await anyio.to_thread.run_sync(judge_spec, engine.agent, request, plan, want)

    try:
        async with Client(create_app(settings, engine)) as client:
            return {split: await eval_split(client, split, judge if judge_plans else None) for split in splits}
    finally:
        engine.close()


def _validation_figures() -> dict[str, Any]:
    from image_composer_mcp.server.validation.validator import validate_text

    out: dict[str, Any] = {}
    for label, root in (("reference", REFERENCE), ("library", PACKAGE_ROOT / "image-templates")):
        files = sorted(root.glob("*.yml")) if root.is_dir() else []
        if not files:
            continue
        texts = [(f.read_text(), f.parent) for f in files]
        validate_text(texts[0][0], base_dir=texts[0][1])  # schema load and compile
        per: list[float] = []
        errors = 0
        upstream_refused = sum(not upstream_accepts(text) for text, _base in texts)
        started = time.perf_counter()
        for text, base in texts:
            t = time.perf_counter()
            errors += len(validate_text(text, base_dir=base).errors)
            per.append((time.perf_counter() - t) * 1000)
        out[label] = {"templates": len(texts), "total_ms": round((time.perf_counter() - started) * 1000, 1),
                      "per_template_ms_p50": _pct(per, 0.5), "per_template_ms_p95": _pct(per, 0.95),
                      "errors": errors, "upstream_refused": upstream_refused}
    return out


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def _verification_figures(workdir: Path, size: int = 60_000, checks: int = 300) -> dict[str, Any]:
    from image_composer_mcp.server.packages.verifier import PackageVerifier

    repo = workdir / "repo"
    repo.mkdir()
    names = [f"pkg-{i:05d}-{'tool' if i % 3 else 'lib'}" for i in range(size)]
    body = "".join(f"Package: {n}\nVersion: 1.{i % 97}\nArchitecture: amd64\nProvides: virt-{i}\n\n"
                   for i, n in enumerate(names))
    (repo / "Packages.gz").write_bytes(gzip.compress(body.encode()))
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(repo)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/Packages.gz"
        wanted = names[:: size // checks][: checks - 5] + ["pkg-missing-a", "pkg-00001-too", "virt-17", "pkg-0001*",
                                                           "pkg-00002-tool=1.2"]
        verifier = PackageVerifier(workdir / "cache", sources={"ubuntu24": [url]})
        t = time.perf_counter()
        first = verifier.verify(wanted, os="ubuntu", dist="ubuntu24", arch="x86_64")
        first_ms = (time.perf_counter() - t) * 1000
        repeats = []
        for _ in range(20):
            t = time.perf_counter()
            again = verifier.verify(wanted, os="ubuntu", dist="ubuntu24", arch="x86_64")
            repeats.append((time.perf_counter() - t) * 1000)
        verifier.close()
        restarted = PackageVerifier(workdir / "cache", sources={"ubuntu24": [url]})
        t = time.perf_counter()
        restarted.verify(wanted, os="ubuntu", dist="ubuntu24", arch="x86_64")
        restart_ms = (time.perf_counter() - t) * 1000
        restarted.close()
    finally:
        server.shutdown()
    return {"index_packages": size, "checked": len(wanted), "found": len(again.found), "missing": len(again.missing),
            "first_ms": round(first_ms, 1), "repeat_ms_p50": _pct(repeats, 0.5),
            "repeat_ms_p95": _pct(repeats, 0.95), "after_restart_ms": round(restart_ms, 1),
            "first_found": len(first.found)}


def run(cache: Path | None = None) -> dict[str, Any]:
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        results = {"validation": _validation_figures(), "verification": _verification_figures(workdir)}
        results.update(asyncio.run(_agent_figures(cache or workdir / "agent-cache")))
        results["eval"] = asyncio.run(_eval_figures(cache or workdir / "agent-cache"))
    return results


def _rate(value: float | None) -> str:
    return "not measured" if value is None else f"{value:.0%}"


def markdown(r: dict[str, Any]) -> str:
    lines = ["## Generation and refinement (offline provider)", "",
             "| figure | value |", "|---|---|"]
    g, f = r["generation"], r["refinement"]
    lines += [f"| requests in the table (`tests/data/requests.yaml`) | {g['requests']} |",
              f"| valid-template rate | {g['valid_rate']:.0%} |",
              f"| accepted by os-image-composer's own schema file, unchanged (counted apart) | "
              f"{_rate(g.get('upstream_valid_rate'))} |",
              f"| constraint adherence (every stated fact landed) | {g['constraint_adherence']:.0%} |",
              f"| generation latency p50 / p95 (MCP in-process, incl. validation) | {g['latency_ms_p50']} / "
              f"{g['latency_ms_p95']} ms |",
              f"| refinement instructions (`tests/data/refinements.yaml`) | {f['instructions']} |",
              f"| refinement success (valid and the asked change landed; ADR target > 90 %) | {f['success_rate']:.0%} |",
              f"| refined templates accepted by os-image-composer's own schema file | "
              f"{_rate(f.get('upstream_valid_rate'))} |",
              f"| refinement latency p50 / p95 | {f['latency_ms_p50']} / {f['latency_ms_p95']} ms |", ""]
    for fail in g["failures"] + f["failures"]:
        lines.append(f"- not met: {fail.get('request') or fail.get('instruction')}: {'; '.join(fail['problems'])}")
    if "eval" in r:
        lines += ["", "## Evaluation set from user intents (`bench/eval/generation.yaml`, offline provider)", "",
                  "Split once into halves before tuning; tuned on dev only. Fully right = every stated fact "
                  "holds; misses reported = share of misses whose explanation says what was not done.", "",
                  "| half | requests fully right | refinements fully right | misses reported in explanation |",
                  "|---|---|---|---|"]
        for split, e in r["eval"].items():
            q, f2 = e["requests"], e["refinements"]
            misses = q["misses"] + f2["misses"]
            told = q["reported"] + f2["reported"]
            lines.append(f"| {split} | {q['right']}/{q['count']} ({q['fully_right']:.1%}) | {f2['right']}/{f2['count']} "
                         f"({f2['fully_right']:.1%}) | {told}/{misses} |")
        lines.append("")
        for fail in r["eval"].get("test", {}).get("requests", {}).get("failures", []) + \
                r["eval"].get("test", {}).get("refinements", {}).get("failures", []):
            lines.append(f"- test half, not met: {fail['text']}: {'; '.join(fail['problems'])}"
                         f"{'' if fail['reported'] else ' (NOT reported)'}")
    lines += ["", "## Validation and package verification", "", "| figure | value |", "|---|---|"]
    for label, v in r["validation"].items():
        lines.append(f"| validate {v['templates']} {label} templates | {v['total_ms']} ms total, "
                     f"p50 {v['per_template_ms_p50']} ms, p95 {v['per_template_ms_p95']} ms, {v['errors']} errors, "
                     f"{v.get('upstream_refused', '?')} refused by upstream's schema |")
    v = r["verification"]
    lines += [f"| verify {v['checked']} names against a {v['index_packages']:,}-package index: first call "
              f"(download + parse) | {v['first_ms']} ms |",
              f"| same check repeated | p50 {v['repeat_ms_p50']} ms, p95 {v['repeat_ms_p95']} ms |",
              f"| same check after a restart (parsed index reloaded from disk) | {v['after_restart_ms']} ms |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--eval":
        # Development loop: one half only, failures listed (python -m bench.agent_bench --eval dev).
        logging.disable(logging.WARNING)
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(_eval_figures(Path(tmp), (sys.argv[2],)))[sys.argv[2]]
        for kind, e in figures.items():
            print(f"{kind}: {e['count']} fully right {e['fully_right']:.1%}, misses reported {e['misses_reported']:.0%}")
            for fail in e["failures"]:
                print(f"  - {fail['text']}: {'; '.join(fail['problems'])} {'' if fail['reported'] else '(NOT reported)'}")
        sys.exit(0)
    results = run()
    print(json.dumps(results, indent=1), file=sys.stderr)
    print(markdown(results))
