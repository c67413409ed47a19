"""The conversation store's SQL, written once for SQLite and PostgreSQL.

Both stores keep the same three tables and the same semantics (conversations.py); they differ only in how they
connect, the parameter mark, the table names, and PostgreSQL's row locks (``FOR UPDATE``), which let several
replicas write one conversation in turn. A subclass names those differences as class attributes and provides
``_tx``; every query and every rule (expiry, eviction, compare-and-set, reverts) lives here.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from ..core.logs import redact, redact_known
from .conversations import (
    ROLES,
    ConcurrentModification,
    Conversation,
    ConversationNotFound,
    ConversationSummary,
    Message,
    Revision,
    dead_reason,
    dump_meta,
    validate_id,
)

log = logging.getLogger(__name__)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class SqlConversationStore:
    """The :class:`~.conversations.ConversationStore` contract over a DB-API connection from ``_tx``."""

    # What differs between databases; queries name them as {c} {r} {m} (tables), {lock} and {skip}.
    PARAM: ClassVar[str] = "?"
    TABLES: ClassVar[dict[str, str]] = {"c": "conversations", "r": "revisions", "m": "messages"}
    ROW_LOCK: ClassVar[str] = ""  # appended to a read of one conversation that is then written
    SKIP_LOCKED: ClassVar[str] = ""  # appended to a read of many: skip those another writer holds
    _queries: ClassVar[dict[str, str]]

    def __init__(self, *, max_history: int, idle_timeout_s: float, max_age_s: float, max_conversations: int,
                 max_revisions: int, tombstone_ttl_s: float | None, clock: Callable[[], float]):
        if max_history < 1 or max_conversations < 1 or max_revisions < 1:
            raise ValueError("max_history, max_conversations and max_revisions must be at least 1")
        self.max_history = max_history
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_age_s = float(max_age_s)
        self.max_conversations = max_conversations
        self.max_revisions = max_revisions
        self.tombstone_ttl_s = float(tombstone_ttl_s if tombstone_ttl_s is not None else max(max_age_s, 86400))
        self._clock = clock
        self.unknown_note = ""  # added to "does not exist" (e.g. the store moved to a fallback cache dir, and why)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._queries = {}

    # --- what a subclass provides ----------------------------------------------------------------

    def _tx(self, write: bool = True) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _lock_new_id(self, conn: Any, cid: str) -> None:
        """Serialise creations of one client-chosen id (across processes where the database can)."""

    def _where(self) -> dict[str, Any]:
        raise NotImplementedError

    def _more_stats(self) -> dict[str, Any]:
        return {}

    # --- queries -----------------------------------------------------------------------------------

    def _q(self, template: str) -> str:
        """``template`` in this database's dialect (formatted once per class)."""
        query = self._queries.get(template)
        if query is None:
            query = template.format(**self.TABLES, lock=self.ROW_LOCK, skip=self.SKIP_LOCKED)
            if self.PARAM != "?":
                query = query.replace("?", self.PARAM)
            self._queries[template] = query
        return query

    def _run(self, conn: Any, template: str, args: tuple[Any, ...] | list[Any] = ()) -> Any:
        return conn.execute(self._q(template), args)

    # --- liveness ------------------------------------------------------------------------------

    def _dead_reason(self, row: tuple[Any, ...], now: float) -> tuple[str, str] | None:
        return dead_reason(row, now, self.max_age_s, self.idle_timeout_s)

    def _live_row(self, conn: Any, conversation_id: str, now: float) -> tuple[Any, ...]:
        """The conversation row if live (locked for this transaction where the database can), else
        ConversationNotFound (expire() writes the tombstone later)."""
        validate_id(conversation_id)
        row = self._run(conn, "SELECT created_at, last_active, ended_at, ended_reason, current_revision, metadata "
                              "FROM {c} WHERE id = ?{lock}", (conversation_id,)).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id, detail=self.unknown_note)
        dead = self._dead_reason(tuple(row[:4]), now)
        if dead:
            raise ConversationNotFound(conversation_id, dead[0], dead[1])
        return tuple(row)

    def _end(self, conn: Any, ids: list[str], reason: str, now: float) -> None:
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            self._run(conn, f"DELETE FROM {{r}} WHERE conversation_id IN ({marks})", chunk)
            self._run(conn, f"DELETE FROM {{m}} WHERE conversation_id IN ({marks})", chunk)
            self._run(conn, "UPDATE {c} SET ended_at = ?, ended_reason = ?, current_revision = 0, "
                            f"metadata = '{{{{}}}}' WHERE id IN ({marks})", (now, reason, *chunk))
        for cid in ids:
            log.info("conversation ended id=%s reason=%s", cid, reason)

    def _expire_locked(self, conn: Any, now: float) -> int:
        ids = [r[0] for r in self._run(
            conn, "SELECT id FROM {c} WHERE ended_at IS NULL AND (last_active < ? OR created_at < ?){skip}",
            (now - self.idle_timeout_s, now - self.max_age_s)).fetchall()]
        if ids:
            self._end(conn, ids, "expired", now)
        self._run(conn, "DELETE FROM {c} WHERE ended_at IS NOT NULL AND ended_at < ?", (now - self.tombstone_ttl_s,))
        return len(ids)

    def _evict_for_one_more(self, conn: Any, now: float) -> None:
        live = self._run(conn, "SELECT COUNT(*) FROM {c} WHERE ended_at IS NULL").fetchone()[0]
        excess = live - self.max_conversations + 1
        if excess <= 0:
            return
        ids = [r[0] for r in self._run(
            conn, "SELECT id FROM {c} WHERE ended_at IS NULL ORDER BY last_active, created_at LIMIT ?{skip}",
            (excess,)).fetchall()]
        log.info("conversation store full (%d live); evicting %d least recently active", live, len(ids))
        self._end(conn, ids, "evicted", now)

    # --- public API ----------------------------------------------------------------------------

    def create(self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None) -> Conversation:
        """A new conversation, or the live one with this id (metadata merged in)."""
        cid = validate_id(conversation_id) if conversation_id is not None else uuid.uuid4().hex
        meta_json = dump_meta(metadata or {})
        now = self._clock()
        with self._tx() as conn:
            self._lock_new_id(conn, cid)
            row = self._run(conn, "SELECT created_at, last_active, ended_at, ended_reason, metadata FROM {c} "
                                  "WHERE id = ?{lock}", (cid,)).fetchone()
            if row is not None and self._dead_reason(tuple(row[:4]), now) is None:
                merged = {**json.loads(row[4]), **(metadata or {})}
                self._run(conn, "UPDATE {c} SET last_active = ?, metadata = ? WHERE id = ?",
                          (now, dump_meta(merged), cid))
                log.info("conversation reused id=%s", cid)
            else:
                if row is not None:
                    self._run(conn, "DELETE FROM {c} WHERE id = ?", (cid,))
                self._expire_locked(conn, now)
                self._evict_for_one_more(conn, now)
                self._run(conn, "INSERT INTO {c} (id, created_at, last_active, metadata) VALUES (?, ?, ?, ?)",
                          (cid, now, now, meta_json))
                log.info("conversation created id=%s", cid)
            return self._load(conn, cid)

    def get(self, conversation_id: str) -> Conversation:
        """The live conversation (touching its last-active time), or ConversationNotFound."""
        now = self._clock()
        with self._tx() as conn:
            self._live_row(conn, conversation_id, now)
            self._run(conn, "UPDATE {c} SET last_active = ? WHERE id = ?", (now, conversation_id))
            return self._load(conn, conversation_id)

    def _load(self, conn: Any, cid: str) -> Conversation:
        created_at, last_active, current, metadata = self._run(
            conn, "SELECT created_at, last_active, current_revision, metadata FROM {c} WHERE id = ?",
            (cid,)).fetchone()
        revisions = [Revision(r[0], r[1], r[2], r[3], bool(r[4])) for r in self._run(
            conn, "SELECT revision, yaml, created_at, note, valid FROM {r} WHERE conversation_id = ? "
                  "ORDER BY revision", (cid,)).fetchall()]
        messages = [Message(r[0], r[1], r[2]) for r in self._run(
            conn, "SELECT role, content, at FROM {m} WHERE conversation_id = ? ORDER BY id", (cid,)).fetchall()]
        return Conversation(cid, created_at, last_active, current, revisions, messages, json.loads(metadata))

    def add_revision(self, conversation_id: str, yaml: str, *, note: str, valid: bool,
                     expected_revision: int | None = None) -> int:
        """Store a new current template; returns its revision number (1 for the first)."""
        if not isinstance(yaml, str):
            raise TypeError("yaml must be the template text (str)")
        now = self._clock()
        with self._tx() as conn:
            current = self._live_row(conn, conversation_id, now)[4]
            if expected_revision is not None and expected_revision != current:
                raise ConcurrentModification(conversation_id, expected_revision, current)
            return self._append(conn, conversation_id, yaml, note, valid, current, now)

    def _append(self, conn: Any, cid: str, yaml: str, note: str, valid: bool, current: int, now: float) -> int:
        latest = self._run(conn, "SELECT COALESCE(MAX(revision), 0) FROM {r} WHERE conversation_id = ?",
                           (cid,)).fetchone()[0]
        new = max(latest, current) + 1
        # Nothing secret is persisted: notes may quote an upstream error; the YAML keeps its exact text apart
        # from configured secrets (see server/core/logs.py).
        yaml, note = redact_known(yaml), redact(note)
        self._run(conn, "INSERT INTO {r} (conversation_id, revision, yaml, created_at, note, valid) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (cid, new, yaml, now, note, bool(valid)))
        self._run(conn, "UPDATE {c} SET current_revision = ?, last_active = ? WHERE id = ?", (new, now, cid))
        self._run(conn, "DELETE FROM {r} WHERE conversation_id = ? AND revision <= ?",
                  (cid, new - self.max_revisions))
        log.info("conversation revision id=%s revision=%d valid=%s note=%s", cid, new, bool(valid), note[:80])
        return new

    def revert(self, conversation_id: str, revision: int) -> int:
        """Make an old revision current again, as a NEW revision (nothing is ever lost)."""
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            old = self._run(conn, "SELECT yaml, valid FROM {r} WHERE conversation_id = ? AND revision = ?",
                            (conversation_id, revision)).fetchone()
            if old is None:
                lo, hi = self._run(conn, "SELECT MIN(revision), MAX(revision) FROM {r} WHERE conversation_id = ?",
                                   (conversation_id,)).fetchone()
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
            self._run(conn, "INSERT INTO {m} (conversation_id, role, content, at) VALUES (?, ?, ?, ?)",
                      (conversation_id, role, redact(content), now))
            # Keep only the newest max_history messages.
            self._run(conn, "DELETE FROM {m} WHERE conversation_id = ? AND id NOT IN "
                            "(SELECT id FROM {m} WHERE conversation_id = ? ORDER BY id DESC LIMIT ?)",
                      (conversation_id, conversation_id, self.max_history))
            self._run(conn, "UPDATE {c} SET last_active = ? WHERE id = ?", (now, conversation_id))

    def update_metadata(self, conversation_id: str, updates: dict[str, Any]) -> dict[str, Any]:
        """Merge ``updates`` into the metadata (a ``None`` value removes the key); returns the result."""
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            merged = {**json.loads(row[5]), **updates}
            merged = {k: v for k, v in merged.items() if v is not None}
            self._run(conn, "UPDATE {c} SET metadata = ?, last_active = ? WHERE id = ?",
                      (dump_meta(merged), now, conversation_id))
            return merged

    def list(self, limit: int = 50) -> list[ConversationSummary]:
        """Live conversations, most recently active first (does not touch them)."""
        now = self._clock()
        with self._tx(write=False) as conn:
            rows = self._run(
                conn, "SELECT c.id, c.created_at, c.last_active, c.current_revision, c.metadata, "
                      "(SELECT COUNT(*) FROM {r} r WHERE r.conversation_id = c.id), "
                      "(SELECT COUNT(*) FROM {m} m WHERE m.conversation_id = c.id) "
                      "FROM {c} c WHERE c.ended_at IS NULL AND c.last_active >= ? AND c.created_at >= ? "
                      "ORDER BY c.last_active DESC LIMIT ?",
                (now - self.idle_timeout_s, now - self.max_age_s, max(0, int(limit)))).fetchall()
        return [ConversationSummary(r[0], r[1], r[2], r[3], r[5], r[6], json.loads(r[4])) for r in rows]

    def delete(self, conversation_id: str) -> bool:
        """End a conversation now; True if it was live."""
        validate_id(conversation_id)
        now = self._clock()
        with self._tx() as conn:
            row = self._run(conn, "SELECT created_at, last_active, ended_at, ended_reason FROM {c} "
                                  "WHERE id = ?{lock}", (conversation_id,)).fetchone()
            if row is None or self._dead_reason(tuple(row), now) is not None:
                return False
            self._end(conn, [conversation_id], "deleted", now)
            return True

    def expire(self) -> int:
        """End idle and over-age conversations; returns how many ended now."""
        now = self._clock()
        with self._tx() as conn:
            return self._expire_locked(conn, now)

    def stats(self) -> dict[str, Any]:
        now = self._clock()
        live_filter = "ended_at IS NULL AND last_active >= ? AND created_at >= ?"
        args = (now - self.idle_timeout_s, now - self.max_age_s)
        with self._tx(write=False) as conn:
            live = self._run(conn, f"SELECT COUNT(*) FROM {{c}} WHERE {live_filter}", args).fetchone()[0]
            revisions, valid = self._run(
                conn, "SELECT COUNT(*), COALESCE(SUM(CASE WHEN valid THEN 1 ELSE 0 END), 0) FROM {r} "
                      f"WHERE conversation_id IN (SELECT id FROM {{c}} WHERE {live_filter})", args).fetchone()
            ended = dict(self._run(conn, "SELECT ended_reason, COUNT(*) FROM {c} WHERE ended_at IS NOT NULL "
                                         "GROUP BY ended_reason").fetchall())
        return {
            **self._where(),
            "live_conversations": live,
            "revisions": revisions,
            "valid_revisions": valid,
            "avg_revisions_per_conversation": round(revisions / live, 2) if live else 0.0,
            "ended_recently": ended,
            "max_conversations": self.max_conversations,
            **self._more_stats(),
        }
