"""The PostgreSQL conversation store against a real PostgreSQL server started by the test (tests/services.py).

The SQLite store's behaviour tests run unchanged against it (same contract), plus what only several replicas
need: one database shared by several store objects (as by several servers), row-locked revisions with no
lost or duplicated numbers, the cross-replica refinement lock, and the versioned schema migration.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.services import PostgresServer, pg_unavailable_reason, postgres_server
from tests.unit import test_conversations as contract

_REASON = pg_unavailable_reason()
pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(_REASON is not None, reason=f"no PostgreSQL server can start here: {_REASON}")]

T1, T2 = contract.T1, contract.T2
Clock = contract.Clock
clock = contract.clock


@pytest.fixture(scope="module")
def pg() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


def _fresh(pg: PostgresServer) -> None:
    import psycopg

    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS oic_messages, oic_revisions, oic_conversations, oic_schema_version")


@pytest.fixture
def store(pg: PostgresServer, clock: Clock) -> Iterator[object]:
    from image_composer_mcp.server.agent.conversations_pg import PostgresConversationStore

    _fresh(pg)
    s = PostgresConversationStore(pg.url, clock=clock)
    yield s
    s.close()


# The SQLite store's contract, run against PostgreSQL.
test_satisfies_the_protocol = contract.test_satisfies_the_protocol
test_lifecycle = contract.test_lifecycle
test_unknown_id_message = contract.test_unknown_id_message
test_client_supplied_id_is_reused_while_live = contract.test_client_supplied_id_is_reused_while_live
test_deleted_id_can_start_afresh = contract.test_deleted_id_can_start_afresh
test_invalid_ids = contract.test_invalid_ids
test_valid_id_edges = contract.test_valid_id_edges
test_revert_creates_a_new_revision = contract.test_revert_creates_a_new_revision
test_optimistic_concurrency = contract.test_optimistic_concurrency
test_idle_expiry = contract.test_idle_expiry
test_stats = contract.test_stats


def test_replicas_sharing_one_database_lose_and_duplicate_no_revision(pg: PostgresServer) -> None:
    from image_composer_mcp.server.agent.conversations import ConcurrentModification
    from image_composer_mcp.server.agent.conversations_pg import PostgresConversationStore

    _fresh(pg)
    replicas = [PostgresConversationStore(pg.url, pool_size=4) for _ in range(3)]
    try:
        cid = replicas[0].create().id
        replicas[1].add_revision(cid, T1, note="generated", valid=True)

        def retrying(n: int) -> None:  # what the agent does on a conflict: read again, write again
            store = replicas[n % 3]
            while True:
                current = store.get(cid).current_revision
                try:
                    store.add_revision(cid, f"image:\n  name: r{n}\n", note=f"r{n}", valid=True,
                                       expected_revision=current)
                    return
                except ConcurrentModification:
                    continue

        threads = [threading.Thread(target=retrying, args=(n,)) for n in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        conv = replicas[2].get(cid)
        assert [r.revision for r in conv.revisions] == list(range(1, 26))
        assert sorted(r.note for r in conv.revisions[1:]) == sorted(f"r{n}" for n in range(24))
    finally:
        for s in replicas:
            s.close()


def test_exclusive_serialises_refinements_across_store_objects(pg: PostgresServer) -> None:
    from image_composer_mcp.server.agent.conversations_pg import PostgresConversationStore

    _fresh(pg)
    a, b = PostgresConversationStore(pg.url), PostgresConversationStore(pg.url)
    try:
        cid = a.create().id
        a.add_revision(cid, T1, note="generated", valid=True)
        inside = threading.Event()
        order: list[str] = []

        def second() -> None:
            with b.exclusive(cid):
                order.append("b")

        with a.exclusive(cid):
            inside.set()
            t = threading.Thread(target=second)
            t.start()
            t.join(1.0)
            assert t.is_alive()  # b waits for a's refinement to finish
            order.append("a")
        t.join(30)
        assert order == ["a", "b"]
        with a.exclusive("other-conversation"), b.exclusive("yet-another"):  # others are not held up
            pass
    finally:
        a.close()
        b.close()


def test_schema_is_versioned_and_migrated_once(pg: PostgresServer) -> None:
    import psycopg
    from image_composer_mcp.server.agent.conversations import ConversationError
    from image_composer_mcp.server.agent.conversations_pg import SCHEMA_VERSION, PostgresConversationStore

    _fresh(pg)
    stores = []
    threads = [threading.Thread(target=lambda: stores.append(PostgresConversationStore(pg.url))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert len(stores) == 3 and stores[0].schema_version() == SCHEMA_VERSION
        with psycopg.connect(pg.url) as conn:
            rows = conn.execute("SELECT version FROM oic_schema_version ORDER BY version").fetchall()
            assert [r[0] for r in rows] == list(range(1, SCHEMA_VERSION + 1))
            conn.execute("INSERT INTO oic_schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
        with pytest.raises(ConversationError, match="newer than this server"):
            PostgresConversationStore(pg.url)
    finally:
        for s in stores:
            s.close()


def test_unreachable_database_gives_a_clear_error_without_the_password() -> None:
    from image_composer_mcp.server.agent.conversations import ConversationError
    from image_composer_mcp.server.agent.conversations_pg import PostgresConversationStore

    from tests.services import free_port

    url = f"postgresql://oic:hunter2-secret@127.0.0.1:{free_port()}/oic"
    with pytest.raises(ConversationError) as info:
        PostgresConversationStore(url, connect_timeout=2)
    text = str(info.value)
    assert "OIC_AI_CONVERSATIONS_URL" in text and "127.0.0.1" in text and "hunter2" not in text


def test_settings_select_the_store(pg: PostgresServer, tmp_path) -> None:
    from image_composer_mcp.server.agent.conversations_pg import PostgresConversationStore
    from image_composer_mcp.server.agent.conversations_sqlite import SqliteConversationStore
    from image_composer_mcp.server.agent.stores import open_conversation_store
    from image_composer_mcp.server.core.config import load_settings

    _fresh(pg)
    pg_store = open_conversation_store(load_settings(env={"OIC_AI_CONVERSATIONS_URL": pg.url}), tmp_path)
    lite = open_conversation_store(load_settings(env={}), tmp_path)
    try:
        assert isinstance(pg_store, PostgresConversationStore) and isinstance(lite, SqliteConversationStore)
        assert pg_store.stats()["backend"] == "postgresql" and "postgres@" not in pg_store.stats()["url"]
    finally:
        pg_store.close()
        lite.close()
