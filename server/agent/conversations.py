"""Conversation store: templates under refinement, their revisions and message history.

SQLite in WAL mode behind the small :class:`ConversationStore` protocol, so a
shared PostgreSQL implementation can replace it when several server replicas
must see the same conversations.

Decisions worth knowing:

* A client may supply its own conversation id. ``create`` with an id that is
  live returns that conversation (metadata given is merged in); an id that
  expired or was deleted starts afresh.
* Revisions are never rewritten: ``revert`` appends a new revision that copies
  an old one, so the history can always be walked back. The current revision
  is always the newest one.
* Expired, evicted and deleted conversations leave a small tombstone (id,
  reason, time) for ``tombstone_ttl_s`` so a client hears "expired, start a new
  one" rather than "unknown id". Their revisions and messages are deleted.
* When more than ``max_conversations`` are live, creating one evicts the least
  recently active conversations.
* ``add_revision(expected_revision=n)`` is a compare-and-set: a write based on a
  stale revision raises :class:`ConcurrentModification` instead of silently
  overwriting someone else's refinement.
* A corrupt database file is moved aside (``<name>.corrupt-<time>``) with a
  warning and a fresh store is started: losing conversations is better than a
  server that cannot start.

Calls are synchronous and quick; async callers may run them in a worker
thread. One connection is shared under a lock (SQLite serialises writers
anyway); ``BEGIN IMMEDIATE`` plus ``busy_timeout`` keep several processes on
one file correct.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core.diskfull import DiskFullError, is_disk_full
from ..core.logs import redact, redact_known

log = logging.getLogger(__name__)

_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
ROLES = frozenset({"system", "user", "assistant", "tool"})
SCHEMA_VERSION = 1
_START_HINT = "call generate_template to start a new conversation"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    last_active REAL NOT NULL,
    current_revision INTEGER NOT NULL DEFAULT 0,
    metadata TEXT NOT NULL DEFAULT '{}',
    ended_at REAL,
    ended_reason TEXT
);
CREATE INDEX IF NOT EXISTS conversations_live ON conversations (ended_at, last_active);
CREATE TABLE IF NOT EXISTS revisions (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    revision INTEGER NOT NULL,
    yaml TEXT NOT NULL,
    created_at REAL NOT NULL,
    note TEXT NOT NULL,
    valid INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, revision)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);
"""


class ConversationError(RuntimeError):
    """The store itself cannot work (e.g. its directory is not writable)."""


class InvalidConversationId(ValueError):
    pass


class ConversationNotFound(KeyError):
    """Unknown, expired, evicted or deleted conversation; ``reason`` says which."""

    def __init__(self, conversation_id: str, reason: str = "unknown", detail: str = ""):
        self.conversation_id = conversation_id
        self.reason = reason
        if reason == "unknown":
            where = f" {detail}" if detail else ""
            text = f"conversation {conversation_id!r} does not exist{where}; {_START_HINT}"
        else:
            text = f"conversation {conversation_id!r} {detail or reason}; {_START_HINT}"
        self.message = text
        super().__init__(text)

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return self.message


class ConcurrentModification(RuntimeError):
    def __init__(self, conversation_id: str, expected: int, current: int):
        self.conversation_id = conversation_id
        self.expected = expected
        self.current = current
        super().__init__(
            f"conversation {conversation_id!r} is at revision {current}, not {expected}: it was changed by "
            "another request meanwhile. Fetch the current template and apply the change again."
        )


@dataclass
class Revision:
    revision: int
    yaml: str
    created_at: float
    note: str
    valid: bool


@dataclass
class Message:
    role: str
    content: str
    at: float


@dataclass
class Conversation:
    id: str
    created_at: float
    last_active: float
    current_revision: int  # 0 until the first template is stored
    revisions: list[Revision] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def current(self) -> Revision | None:
        for rev in reversed(self.revisions):
            if rev.revision == self.current_revision:
                return rev
        return None

    @property
    def current_yaml(self) -> str | None:
        rev = self.current
        return rev.yaml if rev else None

    def revision(self, number: int) -> Revision:
        for rev in self.revisions:
            if rev.revision == number:
                return rev
        raise ValueError(f"conversation {self.id!r} has no revision {number}; {_range_text(self.revisions)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ConversationSummary:
    id: str
    created_at: float
    last_active: float
    current_revision: int
    revisions: int
    messages: int
    metadata: dict[str, Any]


class ConversationStore(Protocol):
    def create(
        self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Conversation: ...
    def get(self, conversation_id: str) -> Conversation: ...
    def add_revision(
        self, conversation_id: str, yaml: str, *, note: str, valid: bool, expected_revision: int | None = None
    ) -> int: ...
    def revert(self, conversation_id: str, revision: int) -> int: ...
    def add_message(self, conversation_id: str, role: str, content: str) -> None: ...
    def update_metadata(self, conversation_id: str, updates: dict[str, Any]) -> dict[str, Any]: ...
    def list(self, limit: int = 50) -> list[ConversationSummary]: ...
    def delete(self, conversation_id: str) -> bool: ...
    def expire(self) -> int: ...
    def stats(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


def validate_id(conversation_id: str) -> str:
    if not isinstance(conversation_id, str) or not _ID_RE.match(conversation_id):
        shown = conversation_id if isinstance(conversation_id, str) else type(conversation_id).__name__
        raise InvalidConversationId(
            f"invalid conversation id {str(shown)[:40]!r}: use 1-128 characters from A-Z a-z 0-9 . _ : -"
        )
    return conversation_id


def _range_text(revisions: list[Revision]) -> str:
    if not revisions:
        return "it has no revisions yet"
    return f"available revisions: {revisions[0].revision}-{revisions[-1].revision}"


class SqliteConversationStore:
    def __init__(
        self,
        path: Path | str,
        *,
        max_history: int = 20,
        idle_timeout_s: float = 1800,
        max_age_s: float = 86400,
        max_conversations: int = 1000,
        max_revisions: int = 200,
        tombstone_ttl_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ):
        if max_history < 1 or max_conversations < 1 or max_revisions < 1:
            raise ValueError("max_history, max_conversations and max_revisions must be at least 1")
        self.path = Path(path)
        self.max_history = max_history
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_age_s = float(max_age_s)
        self.max_conversations = max_conversations
        self.max_revisions = max_revisions
        self.tombstone_ttl_s = float(
            tombstone_ttl_s if tombstone_ttl_s is not None else max(max_age_s, 86400)
        )
        self._clock = clock
        self._lock = threading.RLock()
        self.recovered_from: Path | None = None  # where a corrupt file was moved, if that happened
        self.unknown_note = ""  # added to "does not exist" (e.g. the store moved to a fallback cache dir, and why)
        self._memory = str(path) == ":memory:"
        self._conn = self._open()

    # --- opening, recovery ---------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if not self._memory:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._unwritable(exc) from None
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if self._memory or not _looks_corrupt(exc):
                raise self._unwritable(exc) from None
            self._move_aside(exc)
            try:
                return self._connect()
            except sqlite3.DatabaseError as exc2:
                raise self._unwritable(exc2) from None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            ":memory:" if self._memory else str(self.path),
            timeout=10.0,
            isolation_level=None,  # explicit BEGIN IMMEDIATE below
            check_same_thread=False,
        )
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if not self._memory and mode and str(mode[0]).lower() != "wal":
                log.warning("conversation store %s: WAL not available (journal_mode=%s)", self.path, mode[0])
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            check = conn.execute("PRAGMA quick_check").fetchone()
            if check and check[0] != "ok":
                raise sqlite3.DatabaseError(f"database disk image is malformed ({check[0]})")
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"incompatible schema version {version[0] if version else None} (expected {SCHEMA_VERSION})"
                )
            # A file written by something else may have our table names with other columns.
            conn.execute(
                "SELECT id, created_at, last_active, current_revision, metadata, ended_at, ended_reason "
                "FROM conversations LIMIT 0"
            )
        except (sqlite3.DatabaseError, ValueError) as exc:
            conn.close()
            if isinstance(exc, ValueError):
                raise sqlite3.DatabaseError(f"incompatible schema ({exc})") from None
            raise
        return conn

    def _move_aside(self, exc: Exception) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        try:
            self.path.rename(target)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    side.rename(target.with_name(target.name + suffix))
        except OSError as move_exc:
            raise self._unwritable(move_exc) from None
        self.recovered_from = target
        log.warning(
            "conversation store %s was unreadable (%s); moved it to %s and started an empty store",
            self.path,
            exc,
            target,
        )

    def _unwritable(self, exc: Exception) -> ConversationError:
        if "locked" in str(exc).lower():
            hint = "Another process holds a lock on it; retry, or give this server its own cache dir."
        else:
            hint = (
                "Make sure its directory exists and is writable (set the cache dir, e.g. OIC_AI_CACHE_DIR, "
                "to a writable location)."
            )
        return ConversationError(f"cannot open the conversation store at {self.path}: {exc}. {hint}")

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                if "readonly" in str(exc) or "read-only" in str(exc):
                    raise self._unwritable(exc) from None
                if is_disk_full(exc):
                    raise DiskFullError(self.path.parent, "the conversation store") from None
                raise
            try:
                yield conn
            except BaseException as exc:
                with suppress(sqlite3.OperationalError):  # SQLite may have rolled back itself (e.g. disk full)
                    conn.execute("ROLLBACK")
                if is_disk_full(exc):
                    raise DiskFullError(self.path.parent, "the conversation store") from None
                raise
            else:
                try:
                    conn.execute("COMMIT")
                except sqlite3.OperationalError as exc:
                    with suppress(sqlite3.OperationalError):  # a failed COMMIT may have ended the transaction
                        conn.execute("ROLLBACK")
                    if "readonly" in str(exc) or "read-only" in str(exc):
                        raise self._unwritable(exc) from None
                    if is_disk_full(exc):
                        raise DiskFullError(self.path.parent, "the conversation store") from None
                    raise

    # --- liveness ------------------------------------------------------------------------------

    def _dead_reason(self, row: sqlite3.Row | tuple[Any, ...], now: float) -> tuple[str, str] | None:
        """(reason, human detail) when the conversation is not live, else None."""
        created_at, last_active, ended_at, ended_reason = row
        if ended_at is not None:
            reason = ended_reason or "expired"
            return reason, _DETAIL.get(reason, reason)
        if now - created_at > self.max_age_s:
            return "expired", f"expired: it reached the maximum age of {_duration(self.max_age_s)}"
        if now - last_active > self.idle_timeout_s:
            return "expired", f"expired after {_duration(self.idle_timeout_s)} without activity"
        return None

    def _live_row(self, conn: sqlite3.Connection, conversation_id: str, now: float) -> tuple[Any, ...]:
        """The conversation row if live, else ConversationNotFound (expire() writes the tombstone later)."""
        validate_id(conversation_id)
        row = conn.execute(
            "SELECT created_at, last_active, ended_at, ended_reason, current_revision, metadata "
            "FROM conversations WHERE id = ?",
            (conversation_id,),
        ).fetchone()
        if row is None:
            raise ConversationNotFound(conversation_id, detail=self.unknown_note)
        dead = self._dead_reason(row[:4], now)
        if dead:
            raise ConversationNotFound(conversation_id, dead[0], dead[1])
        return row

    def _end(self, conn: sqlite3.Connection, ids: list[str], reason: str, now: float) -> None:
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            conn.execute(f"DELETE FROM revisions WHERE conversation_id IN ({marks})", chunk)
            conn.execute(f"DELETE FROM messages WHERE conversation_id IN ({marks})", chunk)
            conn.execute(
                f"UPDATE conversations SET ended_at = ?, ended_reason = ?, current_revision = 0, metadata = '{{}}' "
                f"WHERE id IN ({marks})",
                (now, reason, *chunk),
            )
        for cid in ids:
            log.info("conversation ended id=%s reason=%s", cid, reason)

    def _expire_locked(self, conn: sqlite3.Connection, now: float) -> int:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM conversations WHERE ended_at IS NULL AND (last_active < ? OR created_at < ?)",
                (now - self.idle_timeout_s, now - self.max_age_s),
            )
        ]
        if ids:
            self._end(conn, ids, "expired", now)
        conn.execute(
            "DELETE FROM conversations WHERE ended_at IS NOT NULL AND ended_at < ?",
            (now - self.tombstone_ttl_s,),
        )
        return len(ids)

    # --- public API ----------------------------------------------------------------------------

    def create(
        self, conversation_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Conversation:
        """A new conversation, or the live one with this id (metadata merged in)."""
        cid = validate_id(conversation_id) if conversation_id is not None else uuid.uuid4().hex
        meta_json = _dump_meta(metadata or {})
        now = self._clock()
        with self._tx() as conn:
            row = conn.execute(
                "SELECT created_at, last_active, ended_at, ended_reason, metadata FROM conversations WHERE id = ?",
                (cid,),
            ).fetchone()
            if row is not None and self._dead_reason(row[:4], now) is None:
                merged = {**json.loads(row[4]), **(metadata or {})}
                conn.execute(
                    "UPDATE conversations SET last_active = ?, metadata = ? WHERE id = ?",
                    (now, _dump_meta(merged), cid),
                )
                log.info("conversation reused id=%s", cid)
            else:
                if row is not None:
                    conn.execute("DELETE FROM conversations WHERE id = ?", (cid,))
                self._expire_locked(conn, now)
                self._evict_for_one_more(conn, now)
                conn.execute(
                    "INSERT INTO conversations (id, created_at, last_active, metadata) VALUES (?, ?, ?, ?)",
                    (cid, now, now, meta_json),
                )
                log.info("conversation created id=%s", cid)
            return self._load(conn, cid)

    def _evict_for_one_more(self, conn: sqlite3.Connection, now: float) -> None:
        live = conn.execute("SELECT COUNT(*) FROM conversations WHERE ended_at IS NULL").fetchone()[0]
        excess = live - self.max_conversations + 1
        if excess <= 0:
            return
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM conversations WHERE ended_at IS NULL ORDER BY last_active, created_at LIMIT ?",
                (excess,),
            )
        ]
        log.info("conversation store full (%d live); evicting %d least recently active", live, len(ids))
        self._end(conn, ids, "evicted", now)

    def get(self, conversation_id: str) -> Conversation:
        """The live conversation (touching its last-active time), or ConversationNotFound."""
        now = self._clock()
        with self._tx() as conn:
            self._live_row(conn, conversation_id, now)
            conn.execute("UPDATE conversations SET last_active = ? WHERE id = ?", (now, conversation_id))
            return self._load(conn, conversation_id)

    def _load(self, conn: sqlite3.Connection, cid: str) -> Conversation:
        created_at, last_active, current, metadata = conn.execute(
            "SELECT created_at, last_active, current_revision, metadata FROM conversations WHERE id = ?",
            (cid,),
        ).fetchone()
        revisions = [
            Revision(r[0], r[1], r[2], r[3], bool(r[4]))
            for r in conn.execute(
                "SELECT revision, yaml, created_at, note, valid FROM revisions WHERE conversation_id = ? "
                "ORDER BY revision",
                (cid,),
            )
        ]
        messages = [
            Message(r[0], r[1], r[2])
            for r in conn.execute(
                "SELECT role, content, at FROM messages WHERE conversation_id = ? ORDER BY id", (cid,)
            )
        ]
        return Conversation(cid, created_at, last_active, current, revisions, messages, json.loads(metadata))

    def add_revision(
        self,
        conversation_id: str,
        yaml: str,
        *,
        note: str,
        valid: bool,
        expected_revision: int | None = None,
    ) -> int:
        """Store a new current template; returns its revision number (1 for the first)."""
        if not isinstance(yaml, str):
            raise TypeError("yaml must be the template text (str)")
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            current = row[4]
            if expected_revision is not None and expected_revision != current:
                raise ConcurrentModification(conversation_id, expected_revision, current)
            return self._append(conn, conversation_id, yaml, note, valid, current, now)

    def _append(
        self, conn: sqlite3.Connection, cid: str, yaml: str, note: str, valid: bool, current: int, now: float
    ) -> int:
        latest = conn.execute(
            "SELECT COALESCE(MAX(revision), 0) FROM revisions WHERE conversation_id = ?", (cid,)
        ).fetchone()[0]
        new = max(latest, current) + 1
        # Nothing secret is persisted: notes may quote an upstream error; the YAML keeps its exact text apart
        # from configured secrets (see server/core/logs.py).
        yaml, note = redact_known(yaml), redact(note)
        conn.execute(
            "INSERT INTO revisions (conversation_id, revision, yaml, created_at, note, valid) VALUES (?, ?, ?, ?, ?, ?)",
            (cid, new, yaml, now, note, int(bool(valid))),
        )
        conn.execute(
            "UPDATE conversations SET current_revision = ?, last_active = ? WHERE id = ?", (new, now, cid)
        )
        conn.execute(
            "DELETE FROM revisions WHERE conversation_id = ? AND revision <= ?",
            (cid, new - self.max_revisions),
        )
        log.info("conversation revision id=%s revision=%d valid=%s note=%s", cid, new, bool(valid), note[:80])
        return new

    def revert(self, conversation_id: str, revision: int) -> int:
        """Make an old revision current again, as a NEW revision (nothing is ever lost)."""
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            old = conn.execute(
                "SELECT yaml, valid FROM revisions WHERE conversation_id = ? AND revision = ?",
                (conversation_id, revision),
            ).fetchone()
            if old is None:
                lo, hi = conn.execute(
                    "SELECT MIN(revision), MAX(revision) FROM revisions WHERE conversation_id = ?",
                    (conversation_id,),
                ).fetchone()
                available = f"available revisions: {lo}-{hi}" if lo is not None else "it has no revisions yet"
                raise ValueError(f"conversation {conversation_id!r} has no revision {revision}; {available}")
            return self._append(
                conn, conversation_id, old[0], f"revert to revision {revision}", bool(old[1]), row[4], now
            )

    def add_message(self, conversation_id: str, role: str, content: str) -> None:
        if role not in ROLES:
            raise ValueError(f"message role {role!r} is not one of {sorted(ROLES)}")
        now = self._clock()
        with self._tx() as conn:
            self._live_row(conn, conversation_id, now)
            conn.execute(
                "INSERT INTO messages (conversation_id, role, content, at) VALUES (?, ?, ?, ?)",
                (conversation_id, role, redact(content), now),
            )
            # Keep only the newest max_history messages.
            conn.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND id NOT IN "
                "(SELECT id FROM messages WHERE conversation_id = ? ORDER BY id DESC LIMIT ?)",
                (conversation_id, conversation_id, self.max_history),
            )
            conn.execute("UPDATE conversations SET last_active = ? WHERE id = ?", (now, conversation_id))

    def update_metadata(self, conversation_id: str, updates: dict[str, Any]) -> dict[str, Any]:
        """Merge ``updates`` into the metadata (a ``None`` value removes the key); returns the result."""
        now = self._clock()
        with self._tx() as conn:
            row = self._live_row(conn, conversation_id, now)
            merged = {**json.loads(row[5]), **updates}
            merged = {k: v for k, v in merged.items() if v is not None}
            conn.execute(
                "UPDATE conversations SET metadata = ?, last_active = ? WHERE id = ?",
                (_dump_meta(merged), now, conversation_id),
            )
            return merged

    def list(self, limit: int = 50) -> list[ConversationSummary]:
        """Live conversations, most recently active first (does not touch them)."""
        now = self._clock()
        with self._tx(write=False) as conn:
            rows = conn.execute(
                "SELECT c.id, c.created_at, c.last_active, c.current_revision, c.metadata, "
                "(SELECT COUNT(*) FROM revisions r WHERE r.conversation_id = c.id), "
                "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) "
                "FROM conversations c WHERE c.ended_at IS NULL AND c.last_active >= ? AND c.created_at >= ? "
                "ORDER BY c.last_active DESC LIMIT ?",
                (now - self.idle_timeout_s, now - self.max_age_s, max(0, int(limit))),
            ).fetchall()
        return [ConversationSummary(r[0], r[1], r[2], r[3], r[5], r[6], json.loads(r[4])) for r in rows]

    def delete(self, conversation_id: str) -> bool:
        """End a conversation now; True if it was live."""
        validate_id(conversation_id)
        now = self._clock()
        with self._tx() as conn:
            row = conn.execute(
                "SELECT created_at, last_active, ended_at, ended_reason FROM conversations WHERE id = ?",
                (conversation_id,),
            ).fetchone()
            if row is None or self._dead_reason(row, now) is not None:
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
        with self._tx(write=False) as conn:
            live_filter = "ended_at IS NULL AND last_active >= ? AND created_at >= ?"
            args = (now - self.idle_timeout_s, now - self.max_age_s)
            live = conn.execute(f"SELECT COUNT(*) FROM conversations WHERE {live_filter}", args).fetchone()[0]
            revisions, valid = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(valid), 0) FROM revisions WHERE conversation_id IN "
                f"(SELECT id FROM conversations WHERE {live_filter})",
                args,
            ).fetchone()
            ended = dict(
                conn.execute(
                    "SELECT ended_reason, COUNT(*) FROM conversations WHERE ended_at IS NOT NULL GROUP BY ended_reason"
                ).fetchall()
            )
        return {
            "backend": "sqlite",
            "path": str(self.path),
            "live_conversations": live,
            "revisions": revisions,
            "valid_revisions": valid,
            "avg_revisions_per_conversation": round(revisions / live, 2) if live else 0.0,
            "ended_recently": ended,
            "max_conversations": self.max_conversations,
            "recovered_from_corrupt_file": str(self.recovered_from) if self.recovered_from else None,
        }

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_DETAIL = {
    "expired": "expired",
    "evicted": "was evicted because the server holds too many conversations (least recently active first)",
    "deleted": "was deleted",
}


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _dump_meta(metadata: dict[str, Any]) -> str:
    try:
        return json.dumps(metadata, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"conversation metadata must be JSON-serialisable: {exc}") from None


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _looks_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Corruption or a foreign file, as opposed to permissions or locking."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "malformed" in text or "no such column" in text
    return True
