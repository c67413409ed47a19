"""Conversations in PostgreSQL, shared by every replica of a team deployment (``ai.conversations_url``).

The same :class:`~.conversations.ConversationStore` contract, and the same SQL (conversations_sql.py), as the
SQLite store, on psycopg 3 with a connection pool. What changes with several replicas:

* Every write to a conversation takes its row with ``SELECT ... FOR UPDATE`` inside one transaction, so two
  replicas appending revisions to one conversation queue up: revision numbers are never reused or skipped,
  and ``expected_revision`` still detects a refinement based on a stale revision.
* ``exclusive(id)`` holds a session advisory lock for the whole of a refinement (read, LLM call, write), so
  refinements of one conversation arriving at different replicas run one after another instead of
  conflicting and retrying; the agent takes it when the store offers it.
* Creating a conversation with a client-chosen id takes a transaction-scoped advisory lock on that id, so
  two replicas creating it at once end with one conversation.
* The schema is created and migrated at start, under an advisory lock so replicas starting together apply
  each migration once; ``oic_schema_version`` records what was applied. A database newer than this server
  is refused with a clear message rather than written to.

Timestamps are epoch seconds (``double precision``) like the SQLite store's, so the injectable clock works
the same and both stores share the expiry logic.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit

from .conversations import ConversationError, validate_id
from .conversations_sql import SqlConversationStore

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_MIGRATION_LOCK = "mcp-server-image-composer:schema"
# Append only: a released migration is never edited; the next one gets the next number.
MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE oic_conversations (
    id TEXT PRIMARY KEY,
    created_at DOUBLE PRECISION NOT NULL,
    last_active DOUBLE PRECISION NOT NULL,
    current_revision INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    ended_at DOUBLE PRECISION,
    ended_reason TEXT
);
CREATE INDEX oic_conversations_live ON oic_conversations (ended_at, last_active);
CREATE TABLE oic_revisions (
    conversation_id TEXT NOT NULL REFERENCES oic_conversations (id) ON DELETE CASCADE,
    revision INTEGER NOT NULL,
    yaml TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    note TEXT NOT NULL,
    valid BOOLEAN NOT NULL,
    PRIMARY KEY (conversation_id, revision)
);
CREATE TABLE oic_messages (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES oic_conversations (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX oic_messages_by_conversation ON oic_messages (conversation_id, id);
""",
}


def redact_url(url: str) -> str:
    """host:port/database of a PostgreSQL URL: never the user's password in a message or a log."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path}"


class PostgresConversationStore(SqlConversationStore):
    PARAM = "%s"
    TABLES: ClassVar[dict[str, str]] = {"c": "oic_conversations", "r": "oic_revisions", "m": "oic_messages"}
    ROW_LOCK = " FOR UPDATE"
    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"  # a conversation being refined right now is not idle

    def __init__(
        self,
        url: str,
        *,
        max_history: int = 20,
        idle_timeout_s: float = 1800,
        max_age_s: float = 86400,
        max_conversations: int = 1000,
        max_revisions: int = 200,
        tombstone_ttl_s: float | None = None,
        clock: Callable[[], float] = time.time,
        pool_size: int = 10,
        connect_timeout: float = 10.0,
    ):
        super().__init__(max_history=max_history, idle_timeout_s=idle_timeout_s, max_age_s=max_age_s,
                         max_conversations=max_conversations, max_revisions=max_revisions,
                         tombstone_ttl_s=tombstone_ttl_s, clock=clock)
        self.url = redact_url(url)
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise ConversationError(
                "ai.conversations_url selects PostgreSQL, but psycopg is not installed: "
                "pip install 'mcp-server-image-composer[team]'") from None
        self._dsn = url
        self._connect_timeout = connect_timeout
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._pool = ConnectionPool(url, min_size=1, max_size=max(2, pool_size), open=False, name="oic-conversations",
                                    kwargs={"autocommit": True, "application_name": "oic-conversations"},
                                    timeout=connect_timeout)
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
            self._migrate()
        except Exception as exc:
            self._pool.close()
            raise self._unreachable(exc) from None

    # --- connections, schema --------------------------------------------------------------------

    def _unreachable(self, exc: BaseException) -> ConversationError:
        if isinstance(exc, ConversationError):
            return exc
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ConversationError(
            f"cannot use the conversation store at {self.url}: {text}. Check OIC_AI_CONVERSATIONS_URL "
            "(ai.conversations_url): host, port, database, user and password, and that the server is up.")

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[Any]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._errors as exc:
            raise self._unreachable(exc) from None

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS oic_schema_version (version INTEGER PRIMARY KEY, "
                         "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM oic_schema_version").fetchone()
            current: int = row[0] if row else 0
            if current > SCHEMA_VERSION:
                raise ConversationError(
                    f"the conversation database at {self.url} has schema version {current}, newer than this "
                    f"server's {SCHEMA_VERSION}: upgrade this server (every replica should run one version)")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                conn.execute(MIGRATIONS[version])
                conn.execute("INSERT INTO oic_schema_version (version) VALUES (%s)", (version,))
                log.info("conversation store %s: applied schema migration %d", self.url, version)

    def schema_version(self) -> int:
        with self._tx() as conn:
            return int(conn.execute("SELECT MAX(version) FROM oic_schema_version").fetchone()[0])

    def ping(self) -> None:
        """Raise ConversationError unless the database answers (for readiness checks)."""
        with self._tx() as conn:
            conn.execute("SELECT 1")

    @contextmanager
    def exclusive(self, conversation_id: str) -> Iterator[None]:
        """Hold a lock on one conversation across replicas (a refinement runs inside it). Blocking."""
        import psycopg

        validate_id(conversation_id)
        try:
            # Its own connection, not a pooled one: the refinement inside needs pooled connections, and N
            # refinements each holding one of N pooled connections would wait for each other forever.
            with psycopg.connect(self._dsn, autocommit=True, connect_timeout=max(1, int(self._connect_timeout)),
                                 application_name="oic-conversation-lock") as conn:
                conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 1))", (conversation_id,))
                try:
                    yield
                finally:
                    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 1))", (conversation_id,))
        except self._errors as exc:
            raise self._unreachable(exc) from None

    def _lock_new_id(self, conn: Any, cid: str) -> None:
        # Two replicas creating one client-chosen id at once end with one conversation.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 2))", (cid,))

    def _where(self) -> dict[str, Any]:
        return {"backend": "postgresql", "url": self.url}

    def close(self) -> None:
        self._pool.close()
