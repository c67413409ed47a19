"""Conversations in PostgreSQL, shared by every replica of a team deployment (``ai.conversations_url``).

The same :class:`~server.conversations.ConversationStore` contract and the same semantics as the SQLite
store (ids, tombstones, eviction, compare-and-set revisions, reverts as new revisions), on psycopg 3 with a
connection pool. What changes with several replicas:

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

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from .conversations import (
    ROLES,
    ConcurrentModification,
    Conversation,
    ConversationError,
    ConversationNotFound,
    ConversationSummary,
    Message,
    Revision,
    SqliteConversationStore,
    _dump_meta,
    validate_id,
)

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


class PostgresConversationStore:
    # One expiry rule for both stores: it reads only max_age_s and idle_timeout_s.
    _dead_reason = SqliteConversationStore._dead_reason

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
        if max_history < 1 or max_conversations < 1 or max_revisions < 1:
            raise ValueError("max_history, max_conversations and max_revisions must be at least 1")
        self.url = redact_url(url)
        self.max_history = max_history
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_age_s = float(max_age_s)
        self.max_conversations = max_conversations
        self.max_revisions = max_revisions
        self.tombstone_ttl_s = float(tombstone_ttl_s if tombstone_ttl_s is not None else max(max_age_s, 86400))
        self._clock = clock
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
    def _tx(self) -> Iterator[Any]:
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
            current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM oic_schema_version").fetchone()[0]
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

    # --- liveness ------------------------------------------------------------------------------

    def _live_row(self, conn: Any, conversation_id: str, now: float) -> tuple[Any, ...]:
        """The conversation row, locked for this transaction, if live; else ConversationNotFound."""
        validate_id(conversation_id)
        row = conn.execute(
            "SELECT created_at, last_active, ended_at, ended_reason, current_revision, metadata "
            "FROM oic_conversations WHERE id = %s FOR UPDATE",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id)
        dead = self._dead_reason(row[:4], now)
        if dead:
            raise ConversationNotFound(conversation_id, dead[0], dead[1])
        return row

    def _end(self, conn: Any, ids: list[str], reason: str, now: float) -> None:
        conn.execute("DELETE FROM oic_revisions WHERE conversation_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM oic_messages WHERE conversation_id = ANY(%s)", (ids,))
        conn.execute(
            "UPDATE oic_conversations SET ended_at = %s, ended_reason = %s, current_revision = 0, metadata = '{}' "
            "WHERE id = ANY(%s)",
            (now, reason, ids),
        )
        for cid in ids:
            log.info("conversation ended id=%s reason=%s", cid, reason)

    def _expire_locked(self, conn: Any, now: float) -> int:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM oic_conversations WHERE ended_at IS NULL AND (last_active < %s OR created_at < %s) "
            "FOR UPDATE SKIP LOCKED",  # a conversation being refined right now is not idle
            (now - self.idle_timeout_s, now - self.max_age_s)).fetchall()]
        if ids:
            self._end(conn, ids, "expired", now)
        conn.execute("DELETE FROM oic_conversations WHERE ended_at IS NOT NULL AND ended_at < %s",
                     (now - self.tombstone_ttl_s,))
        return len(ids)

    # --- public API ----------------------------------------------------------------------------

    def create(self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None) -> Conversation:
        cid = validate_id(conversation_id) if conversation_id is not None else uuid.uuid4().hex
        meta_json = _dump_meta(metadata or {})
        now = self._clock()
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 2))", (cid,))
            row = conn.execute(
                "SELECT created_at, last_active, ended_at, ended_reason, metadata FROM oic_conversations "
                "WHERE id = %s FOR UPDATE", (cid,)).fetchone()
            if row is not None and self._dead_reason(row[:4], now) is None:
                merged = {**json.loads(row[4]), **(metadata or {})}
                conn.execute("UPDATE oic_conversations SET last_active = %s, metadata = %s WHERE id = %s",
                             (now, _dump_meta(merged), cid))
                log.info("conversation reused id=%s", cid)
            else:
                if row is not None:
                    conn.execute("DELETE FROM oic_conversations WHERE id = %s", (cid,))
                self._expire_locked(conn, now)
                self._evict_for_one_more(conn, now)
                conn.execute(
                    "INSERT INTO oic_conversations (id, created_at, last_active, metadata) VALUES (%s, %s, %s, %s)",
                    (cid, now, now, meta_json))
                log.info("conversation created id=%s", cid)
            return self._load(conn, cid)

    def _evict_for_one_more(self, conn: Any, now: float) -> None:
        live = conn.execute("SELECT COUNT(*) FROM oic_conversations WHERE ended_at IS NULL").fetchone()[0]
        excess = live - self.max_conversations + 1
        if excess <= 0:
            return
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM oic_conversations WHERE ended_at IS NULL ORDER BY last_active, created_at LIMIT %s "
            "FOR UPDATE SKIP LOCKED", (excess,)).fetchall()]
        log.info("conversation store full (%d live); evicting %d least recently active", live, len(ids))
        self._end(conn, ids, "evicted", now)

    def get(self, conversation_id: str) -> Conversation:
        now = self._clock()
        with self._tx() as conn:
            self._live_row(conn, conversation_id, now)
            conn.execute("UPDATE oic_conversations SET last_active = %s WHERE id = %s", (now, conversation_id))
            return self._load(conn, conversation_id)

    def _load(self, conn: Any, cid: str) -> Conversation:
        created_at, last_active, current, metadata = conn.execute(
            "SELECT created_at, last_active, current_revision, metadata FROM oic_conversations WHERE id = %s",
            (cid,)).fetchone()
        revisions = [Revision(r[0], r[1], r[2], r[3], bool(r[4])) for r in conn.execute(
            "SELECT revision, yaml, created_at, note, valid FROM oic_revisions WHERE conversation_id = %s "
            "ORDER BY revision", (cid,)).fetchall()]
        messages = [Message(r[0], r[1], r[2]) for r in conn.execute(
            "SELECT role, content, at FROM oic_messages WHERE conversation_id = %s ORDER BY id", (cid,)).fetchall()]
        return Conversation(cid, created_at, last_active, current, revisions, messages, json.loads(metadata))

    def add_revision(self, conversation_id: str, yaml: str, *, note: str, valid: bool,
                     expected_revision: int | None = None) -> int:
        if not isinstance(yaml, str):
            raise TypeError("yaml must be the template text (str)")
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            current = row[4]
            if expected_revision is not None and expected_revision != current:
                raise ConcurrentModification(conversation_id, expected_revision, current)
            return self._append(conn, conversation_id, yaml, note, valid, current, now)

    def _append(self, conn: Any, cid: str, yaml: str, note: str, valid: bool, current: int, now: float) -> int:
        latest = conn.execute("SELECT COALESCE(MAX(revision), 0) FROM oic_revisions WHERE conversation_id = %s",
                              (cid,)).fetchone()[0]
        new = max(latest, current) + 1
        conn.execute("INSERT INTO oic_revisions (conversation_id, revision, yaml, created_at, note, valid) "
                     "VALUES (%s, %s, %s, %s, %s, %s)", (cid, new, yaml, now, note, bool(valid)))
        conn.execute("UPDATE oic_conversations SET current_revision = %s, last_active = %s WHERE id = %s",
                     (new, now, cid))
        conn.execute("DELETE FROM oic_revisions WHERE conversation_id = %s AND revision <= %s",
                     (cid, new - self.max_revisions))
        log.info("conversation revision id=%s revision=%d valid=%s note=%s", cid, new, bool(valid), note[:80])
        return new

    def revert(self, conversation_id: str, revision: int) -> int:
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            old = conn.execute("SELECT yaml, valid FROM oic_revisions WHERE conversation_id = %s AND revision = %s",
                               (conversation_id, revision)).fetchone()
            if old is None:
                lo, hi = conn.execute("SELECT MIN(revision), MAX(revision) FROM oic_revisions "
                                      "WHERE conversation_id = %s", (conversation_id,)).fetchone()
                available = f"available revisions: {lo}-{hi}" if lo is not None else "it has no revisions yet"
                raise ValueError(f"conversation {conversation_id!r} has no revision {revision}; {available}")
            return self._append(conn, conversation_id, old[0], f"revert to revision {revision}", bool(old[1]),
                                row[4], now)

    def add_message(self, conversation_id: str, role: str, content: str) -> None:
        if role not in ROLES:
            raise ValueError(f"message role {role!r} is not one of {sorted(ROLES)}")
        now = self._clock()
        with self._tx() as conn:
            self._live_row(conn, conversation_id, now)
            conn.execute("INSERT INTO oic_messages (conversation_id, role, content, at) VALUES (%s, %s, %s, %s)",
                         (conversation_id, role, content, now))
            conn.execute(
                "DELETE FROM oic_messages WHERE conversation_id = %s AND id NOT IN "
                "(SELECT id FROM oic_messages WHERE conversation_id = %s ORDER BY id DESC LIMIT %s)",
                (conversation_id, conversation_id, self.max_history))
            conn.execute("UPDATE oic_conversations SET last_active = %s WHERE id = %s", (now, conversation_id))

    def update_metadata(self, conversation_id: str, updates: dict[str, Any]) -> dict[str, Any]:
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            merged = {**json.loads(row[5]), **updates}
            merged = {k: v for k, v in merged.items() if v is not None}
            conn.execute("UPDATE oic_conversations SET metadata = %s, last_active = %s WHERE id = %s",
                         (_dump_meta(merged), now, conversation_id))
            return merged

    def list(self, limit: int = 50) -> list[ConversationSummary]:
        now = self._clock()
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT c.id, c.created_at, c.last_active, c.current_revision, c.metadata, "
                "(SELECT COUNT(*) FROM oic_revisions r WHERE r.conversation_id = c.id), "
                "(SELECT COUNT(*) FROM oic_messages m WHERE m.conversation_id = c.id) "
                "FROM oic_conversations c WHERE c.ended_at IS NULL AND c.last_active >= %s AND c.created_at >= %s "
                "ORDER BY c.last_active DESC LIMIT %s",
                (now - self.idle_timeout_s, now - self.max_age_s, max(0, int(limit)))).fetchall()
        return [ConversationSummary(r[0], r[1], r[2], r[3], r[5], r[6], json.loads(r[4])) for r in rows]

    def delete(self, conversation_id: str) -> bool:
        validate_id(conversation_id)
        now = self._clock()
        with self._tx() as conn:
            row = conn.execute("SELECT created_at, last_active, ended_at, ended_reason FROM oic_conversations "
                               "WHERE id = %s FOR UPDATE", (conversation_id,)).fetchone()
            if row is None or self._dead_reason(row, now) is not None:
                return False
            self._end(conn, [conversation_id], "deleted", now)
            return True

    def expire(self) -> int:
        now = self._clock()
        with self._tx() as conn:
            return self._expire_locked(conn, now)

    def stats(self) -> dict[str, Any]:
        now = self._clock()
        live_filter = "ended_at IS NULL AND last_active >= %s AND created_at >= %s"
        args = (now - self.idle_timeout_s, now - self.max_age_s)
        with self._tx() as conn:
            live = conn.execute(f"SELECT COUNT(*) FROM oic_conversations WHERE {live_filter}", args).fetchone()[0]
            revisions, valid = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(valid::int), 0) FROM oic_revisions WHERE conversation_id IN "
                f"(SELECT id FROM oic_conversations WHERE {live_filter})", args).fetchone()
            ended = dict(conn.execute("SELECT ended_reason, COUNT(*) FROM oic_conversations "
                                      "WHERE ended_at IS NOT NULL GROUP BY ended_reason").fetchall())
        return {
            "backend": "postgresql",
            "url": self.url,
            "live_conversations": live,
            "revisions": revisions,
            "valid_revisions": valid,
            "avg_revisions_per_conversation": round(revisions / live, 2) if live else 0.0,
            "ended_recently": ended,
            "max_conversations": self.max_conversations,
        }

    def close(self) -> None:
        self._pool.close()
