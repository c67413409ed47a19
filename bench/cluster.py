"""Team deployment figures: search p95 and refinement throughput, 1 replica vs 3, on this machine.

    python -m bench.cluster [--replicas 1,3] [--seconds 20] [--clients 20]

The deployment is the real one from README "Deployment for teams", with every component started here:
PostgreSQL (Debian's package, a throwaway cluster) for conversations and the index writer lease, moto's S3
server for the shared LanceDB index and the template library (the bundled image-templates/), and N server
replicas (subprocesses, stateless streamable HTTP) behind a round-robin balancer (tests/cluster_harness.py).
``clients`` MCP clients each keep one session through the balancer, so consecutive requests of one client
land on different replicas. Phase 1: every client searches back to back for ``seconds`` (latency measured
at the client, through the balancer). Phase 2: every client refines its own conversation back to back
(offline provider, package checks offline) for ``seconds``: completed refinements per second.

The load generator, the balancer and the S3 server run in this process on the same cores as the replicas,
so on a small machine the replicas compete with them: read the figures as "what N replicas give on this
box", not as a scaling law. Results go to bench-results/cluster.json and into BENCHMARKS.md between the
cluster-bench markers (``make bench`` keeps that block).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.measure import machine, summary

log = logging.getLogger("bench.cluster")
REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- cluster-bench:start -->", "<!-- cluster-bench:end -->"
QUERIES = ["minimal ubuntu edge image with docker", "real-time kernel for industrial control", "azure linux raw image",
           "immutable image with secure boot", "kiosk display", "emt image for arm64", "openvino inference",
           "nginx web server", "elxr iso installer", "ROS 2 robotics"]


async def _call(client: Any, tool: str, arguments: dict[str, Any]) -> bool:
    """One tool call under load: True when it answered without an error. A JSON-RPC error (an HTTP status the
    balancer or a replica returned) counts as a failure in the figures, with its message in the log, instead of
    ending the whole run."""
    from mcp.shared.exceptions import MCPError

    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as exc:
        log.warning("%s failed under load: %s", tool, exc)
        return False
    return not result.is_error


async def _search_load(url: str, clients: int, seconds: float) -> dict[str, Any]:
    from tests.cluster_harness import mcp_client

    latencies: list[float] = []
    failures = 0
    deadline = time.monotonic() + seconds

    async def one(n: int) -> None:
        nonlocal failures
        async with mcp_client(url) as client:
            i = n
            while time.monotonic() < deadline:
                t = time.perf_counter()
                if await _call(client, "search_templates", {"query": QUERIES[i % len(QUERIES)], "top_k": 5}):
                    latencies.append((time.perf_counter() - t) * 1000)
                else:
                    failures += 1
                i += 1

    started = time.monotonic()
    await asyncio.gather(*(one(n) for n in range(clients)))
    elapsed = time.monotonic() - started
    return {**summary(latencies), "failures": failures, "searches_per_s": round(len(latencies) / elapsed, 1)}


async def _refine_load(url: str, clients: int, seconds: float, tag: str) -> dict[str, Any]:
    from tests.cluster_harness import mcp_client

    done: list[float] = []
    failures = 0
    started = 0
    deadline = float("inf")
    all_started = asyncio.Event()

    def arrived() -> None:
        # The clock starts when every conversation exists (generation is not what is measured here).
        nonlocal started, deadline
        started += 1
        if started == clients:
            deadline = time.monotonic() + seconds
            all_started.set()

    async def one(n: int) -> None:
        nonlocal failures
        cid = f"bench-{tag}-{n:02d}"
        async with mcp_client(url) as client:
            generated = await _call(client, "generate_template", {"request": QUERIES[n % len(QUERIES)],
                                                                   "conversation_id": cid})
            arrived()
            if not generated:
                failures += 1
                return
            await all_started.wait()
            step = 0
            while time.monotonic() < deadline:
                step += 1
                t = time.perf_counter()
                if await _call(client, "refine_template", {"conversation_id": cid,
                                                           "instruction": f"set the hostname to b{n}-{step}"}):
                    done.append((time.perf_counter() - t) * 1000)
                else:
                    failures += 1

    await asyncio.gather(*(one(n) for n in range(clients)))
    measured = max(1e-9, time.monotonic() - (deadline - seconds))  # from the start signal to the last answer
    return {"refinements": len(done), "failures": failures, "refinements_per_s": round(len(done) / measured, 2),
            "latency": summary(done)}


def run(replica_counts: list[int], seconds: float = 20, clients: int = 20) -> dict[str, Any]:
    """Start PostgreSQL and S3, then for each replica count: replicas + balancer, search load, refine load."""
    from tests.cluster_harness import Replica, balancer, replica_env
    from tests.services import pg_unavailable_reason, postgres_server, s3_server, s3_unavailable_reason

    reason = pg_unavailable_reason() or s3_unavailable_reason()
    if reason:
        return {"skipped": reason}
    out: dict[str, Any] = {"clients": clients, "seconds": seconds, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp, postgres_server() as pg, s3_server() as s3:
        library = sorted((REPO / "image-templates").rglob("*.yml"))
        for path in library:
            s3.put(f"templates/{path.relative_to(REPO / 'image-templates').as_posix()}", path.read_bytes())
        out["templates"] = len(library)
        base = {**s3.env(), "OIC_AI_TEMPLATES_DIR": f"s3://{s3.bucket}/templates",
                "OIC_AI_INDEX_URI": f"s3://{s3.bucket}/index", "OIC_AI_CONVERSATIONS_URL": pg.url,
                "OIC_AI_INDEX_REFRESH": "5s", "OIC_AI_PROVIDER": "offline", "OIC_AI_PACKAGES_OFFLINE": "true",
                "OIC_AI_LOG_LEVEL": "WARNING"}
        for count in replica_counts:
            replicas = [Replica(replica_env(base, Path(tmp) / f"cache-{count}-{i}"), Path(tmp) / f"r{count}-{i}.log")
                        for i in range(count)]
            try:
                for r in replicas:
                    r.start()
                    r.wait_ready()
                with balancer([r.url for r in replicas]) as url:
                    asyncio.run(_search_load(url, clients, 2))  # warm-up: models loaded, caches filled
                    log.info("%d replica(s): search load for %.0fs", count, seconds)
                    search = asyncio.run(_search_load(url, clients, seconds))
                    log.info("%d replica(s): refinement load for %.0fs", count, seconds)
                    refine = asyncio.run(_refine_load(url, clients, seconds, f"r{count}"))
                out["runs"][str(count)] = {"search": search, "refine": refine}
                log.info("%d replica(s): search p95 %.0f ms, %.1f refinements/s", count, search["p95_ms"],
                         refine["refinements_per_s"])
            finally:
                for r in replicas:
                    r.stop()
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [START, "## Team deployment: 1 replica vs 3", ""]
    if "skipped" in result:
        lines += [f"Not measured: {result['skipped']}.", END]
        return "\n".join(lines)
    lines += [
        f"`python -m bench.cluster` (also run by `make bench`): {result['clients']} MCP clients through a round-robin "
        f"balancer to N replicas (stateless streamable HTTP) sharing a LanceDB index and {result['templates']} "
        "templates in S3 (moto's server) and conversations in PostgreSQL; each phase runs "
        f"{result['seconds']:.0f} s. Everything (replicas, PostgreSQL, S3, balancer and the clients) shares this "
        f"machine's {result.get('machine', {}).get('cores', '?')} cores; load average at start "
        f"{', '.join(str(x) for x in result.get('machine', {}).get('load_average_at_start', []))}.", "",
        "| replicas | search p50 | search p95 | searches/s | refinements/s | refinement p95 | failures |",
        "|---|---|---|---|---|---|---|"]
    for count, run_ in result["runs"].items():
        s, r = run_["search"], run_["refine"]
        lines.append(f"| {count} | {s['p50_ms']:.0f} ms | {s['p95_ms']:.0f} ms | {s['searches_per_s']} | "
                     f"{r['refinements_per_s']} | {r['latency']['p95_ms']:.0f} ms | "
                     f"{s['failures'] + r['failures']} |")
    lines += ["", "More replicas add capacity only where there are cores to run them: on a 2-core machine that "
              "also runs the load generator, S3 and PostgreSQL, the gain is bounded by the CPU, not by the design.",
              END]
    return "\n".join(lines)


def write_block(report: Path, block: str) -> None:
    old = report.read_text("utf-8") if report.is_file() else ""
    if START in old and END in old:
        new = old[:old.index(START)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    report.write_text(new)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replicas", default="1,3", help="replica counts to compare (default 1,3)")
    p.add_argument("--seconds", type=float, default=20, help="length of each load phase (default 20)")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--out", default=str(REPO / "bench-results"))
    p.add_argument("--report", default=str(REPO / "BENCHMARKS.md"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s",
                        datefmt="%H:%M:%S")
    for noisy in ("httpx", "httpx2", "mcp", "werkzeug", "server", "uvicorn", "uvicorn.error"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ.setdefault("LANCEDB_LOG", "error")
    result = run([int(n) for n in args.replicas.split(",")], args.seconds, args.clients)
    result["machine"] = machine()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster.json").write_text(json.dumps(result, indent=1, default=str))
    write_block(Path(args.report), markdown(result))
    print(markdown(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
