"""A team deployment, for real: three replicas (subprocesses, stateless streamable HTTP) behind a round-robin
balancer, sharing a LanceDB index and the template sources in an S3 bucket (moto's server) and the
conversations in PostgreSQL (a throwaway cluster from Debian's package). Twenty clients generate and refine
for a bounded time while one replica (the index writer) is SIGKILLed and restarted. Afterwards: no revision
lost or duplicated, every search answered, and a template added to the bucket is found on every replica.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.cluster_harness import Replica, balancer, mcp_client, replica_env
from tests.conftest import MINIMAL_TEMPLATE
from tests.services import (
    S3Server,
    pg_unavailable_reason,
    postgres_server,
    s3_server,
    s3_unavailable_reason,
)

_REASON = pg_unavailable_reason() or s3_unavailable_reason()
pytestmark = [pytest.mark.slow, pytest.mark.cluster,
              pytest.mark.skipif(_REASON is not None, reason=f"cluster test cannot run here: {_REASON}")]

CLIENTS = 20
RUN_SECONDS = 25.0
REFRESH = "1s"
TEMPLATES = [
    ("web-nginx", "web server with nginx reverse proxy", "nginx", "web"),
    ("robot-ros", "robotics image with ROS 2 humble", "ros-humble-desktop", "robotics"),
    ("db-postgres", "database server running postgresql", "postgresql", "database"),
    ("vision-ai", "AI vision inference with openvino", "openvino", "vision"),
    ("kiosk-browser", "kiosk display with chromium browser", "chromium", "kiosk"),
]
QUERIES = ["nginx web server", "ROS 2 robotics", "postgresql database", "openvino inference", "chromium kiosk"]


def put_template(s3: S3Server, name: str, description: str, package: str, keyword: str) -> None:
    body = MINIMAL_TEMPLATE.format(name=name, description=description, keywords=keyword, packages=package)
    s3.put(f"templates/{name}.yml", body.encode())


@dataclass
class Cluster:
    s3: S3Server
    pg_url: str
    replicas: list[Replica]
    url: str  # the balancer


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("cluster")
    with postgres_server() as pg, s3_server() as s3:
        for t in TEMPLATES:
            put_template(s3, *t)
        base = {**s3.env(), "OIC_AI_TEMPLATES_DIR": f"s3://{s3.bucket}/templates",
                "OIC_AI_INDEX_URI": f"s3://{s3.bucket}/index", "OIC_AI_CONVERSATIONS_URL": pg.url,
                "OIC_AI_INDEX_REFRESH": REFRESH, "OIC_AI_PROVIDER": "offline", "OIC_AI_PACKAGES_OFFLINE": "true",
                "OIC_AI_LOG_LEVEL": "INFO"}
        replicas = [Replica(replica_env(base, root / f"cache-{i}"), root / f"replica-{i}.log") for i in range(3)]
        try:
            replicas[0].start()  # the first one builds the index; the others find it
            replicas[0].wait_ready()
            for r in replicas[1:]:
                r.start()
            for r in replicas[1:]:
                r.wait_ready()
            with balancer([r.url for r in replicas]) as url:
                yield Cluster(s3, pg.url, replicas, url)
        finally:
            for r in replicas:
                r.stop()


@dataclass
class Tally:
    searches: int = 0
    search_failures: list[str] = field(default_factory=list)
    acknowledged: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # conversation -> (rev, note)
    uncertain: dict[str, list[str]] = field(default_factory=dict)  # refinements whose answer was lost
    errors: list[str] = field(default_factory=list)


async def _call(url: str, tool: str, args: dict) -> dict:
    async with mcp_client(url) as client:
        r = await client.call_tool(tool, args)
    if r.is_error:
        raise RuntimeError(f"{tool} failed: {r.content[0].text if r.content else r}")
    return r.structured_content


async def _search(url: str, query: str, tally: Tally, attempts: int = 5) -> dict:
    last = ""
    for _ in range(attempts):  # a search is idempotent: a balancer or client may simply send it again
        try:
            out = await _call(url, "search_templates", {"query": query, "top_k": 3})
            tally.searches += 1
            return out
        except Exception as exc:  # noqa: BLE001 - counted below
            last = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(0.2)
    tally.search_failures.append(f"{query}: {last}")
    return {}


async def _client(n: int, url: str, deadline: float, tally: Tally) -> None:
    cid = f"cluster-client-{n:02d}"
    rng = random.Random(n)
    acked = tally.acknowledged.setdefault(cid, [])
    for attempt in range(10):
        # Each attempt is worded differently, so a retried one is told apart from one stored twice.
        request = f"{TEMPLATES[n % 5][1]} for ubuntu 24, attempt {attempt}"
        try:
            out = await _call(url, "generate_template", {"request": request, "conversation_id": cid})
            acked.append((out["revision"], f"generated: {request}"))
            break
        except Exception as exc:  # noqa: BLE001 - a replica died mid-call: the client tries again
            tally.uncertain.setdefault(cid, []).append(f"generated: {request}")
            tally.errors.append(f"generate {cid}: {exc}")
            await asyncio.sleep(0.3)
    assert acked, f"{cid} could not start a conversation"
    step = 0
    while step == 0 or time.monotonic() < deadline:  # at least one round, however loaded the machine
        await _search(url, rng.choice(QUERIES), tally)
        step += 1
        instruction = f"set the hostname to c{n:02d}-s{step:03d}"
        try:
            out = await _call(url, "refine_template", {"conversation_id": cid, "instruction": instruction})
            acked.append((out["revision"], f"refined: {instruction}"))
        except Exception as exc:  # noqa: BLE001 - the answer was lost; whether it took effect is unknown
            tally.uncertain.setdefault(cid, []).append(f"refined: {instruction}")
            tally.errors.append(f"refine {cid}: {exc}")


async def _load(url: str, seconds: float, tally: Tally) -> None:
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(_client(n, url, deadline, tally) for n in range(CLIENTS)))


def _revisions(pg_url: str) -> dict[str, list[tuple[int, str]]]:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT conversation_id, revision, note FROM oic_revisions ORDER BY 1, 2").fetchall()
    out: dict[str, list[tuple[int, str]]] = {}
    for cid, revision, note in rows:
        out.setdefault(cid, []).append((revision, note))
    return out


async def _visible_on(replica: Replica, query: str, name: str, deadline: float) -> float:
    started = time.monotonic()
    while time.monotonic() < deadline:
        try:
            out = await _call(replica.url, "search_templates", {"query": query, "top_k": 3})
            if any(r["name"] == name for r in out.get("results", [])):
                return time.monotonic() - started
        except Exception:  # noqa: BLE001 - keep polling until the deadline
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name} not searchable on replica {replica.port}: {replica.log_tail()}")


def test_replicas_share_conversations_and_index_through_a_replica_crash(cluster: Cluster) -> None:
    tally = Tally()

    async def scenario() -> None:
        load = asyncio.create_task(_load(cluster.url, RUN_SECONDS, tally))
        await asyncio.sleep(RUN_SECONDS / 3)
        victim = cluster.replicas[0]  # the first replica: the index writer (sync leader)
        victim.kill()
        await asyncio.sleep(2)
        victim.start()
        await asyncio.to_thread(victim.wait_ready)
        await load

    asyncio.run(scenario())

    # Every search answered (retried on another replica when one died under it).
    assert not tally.search_failures, tally.search_failures[:5]
    assert tally.searches >= CLIENTS

    # No revision lost or duplicated: each conversation's revisions are 1..N with no gap and no repeat; every
    # acknowledged refinement is stored under the revision it was acknowledged with; a refinement whose answer
    # was lost in the crash is stored at most once; nothing else was stored.
    stored = _revisions(cluster.pg_url)
    assert len(tally.acknowledged) == CLIENTS
    total_acked = 0
    for cid, acked in tally.acknowledged.items():
        revs = stored[cid]
        assert [r for r, _ in revs] == list(range(1, len(revs) + 1)), cid
        notes = [n for _, n in revs]
        assert len(notes) == len(set(notes)), f"{cid}: a request was stored twice"
        assert set(acked) <= set(revs), f"{cid}: an acknowledged revision is missing"
        assert set(notes) <= {n for _, n in acked} | set(tally.uncertain.get(cid, [])), cid
        total_acked += len(acked)
    assert total_acked > CLIENTS  # every conversation was generated, and refinements went through

    # A conversation started on one replica is refined on each of the others.
    cid = "cluster-handoff"
    asyncio.run(_call(cluster.replicas[1].url, "generate_template",
                      {"request": "nginx web server on ubuntu 24", "conversation_id": cid}))
    for n, replica in enumerate(cluster.replicas):
        out = asyncio.run(_call(replica.url, "refine_template",
                                {"conversation_id": cid, "instruction": f"set the hostname to handoff-{n}"}))
        assert out["revision"] == n + 2

    # A template added to the bucket becomes searchable on every replica (the restarted writer included).
    put_template(cluster.s3, "lidar-mapper", "lidar point cloud mapping appliance", "pcl-tools", "lidar")

    async def everywhere() -> list[float]:
        deadline = time.monotonic() + 120
        return await asyncio.gather(*(_visible_on(r, "lidar point cloud mapping", "lidar-mapper", deadline)
                                      for r in cluster.replicas))

    asyncio.run(everywhere())

    # Readiness reports the shared index version and the store; exactly one replica writes the index.
    states = [httpx.get(f"{r.url}/healthz/ready", timeout=10).json() for r in cluster.replicas]
    assert all(s["ready"] and s["conversations"] == "ok" and s["index_version"] for s in states), states
    assert sum(bool(s["index_writer"]) for s in states) == 1, states
    assert httpx.get(f"{cluster.replicas[0].url}/healthz/live", timeout=10).status_code == 200


def test_readiness_fails_while_the_store_is_unreachable(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A replica whose PostgreSQL is gone is alive but not ready: the balancer should route around it."""
    from image_composer_mcp.server.core.config import load_settings
    from image_composer_mcp.server.engine import build_engine

    from tests.services import free_port

    settings = load_settings(env={"OIC_AI_CONVERSATIONS_URL": f"postgresql://oic@127.0.0.1:{free_port()}/oic",
                                  "OIC_AI_CACHE_DIR": str(tmp_path), "OIC_AI_EMBEDDING_PROVIDER": "local"})
    engine = build_engine(settings)
    try:
        state = engine.readiness()
        assert state["ready"] is False and state["conversations"] == "unreachable"  # no host names to anyone
        assert "OIC_AI_CONVERSATIONS_URL" in caplog.text  # the operator's log says what to fix
    finally:
        engine.close()
