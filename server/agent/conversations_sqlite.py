"""Conversations in SQLite (WAL mode): one machine, one file in the cache dir.

Calls are synchronous and quick; async callers may run them in a worker thread. One connection is shared
under a lock (SQLite serialises writers anyway); ``BEGIN IMMEDIATE`` plus ``busy_timeout`` keep several
processes on one file correct. A corrupt database file is moved aside (``<name>.corrupt-<time>``) with a
warning and a fresh store is started: losing conversations is better than a server that cannot start.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..core.diskfull import DiskFullError, is_disk_full
from .conversations import ConversationError
from .conversations_sql import SqlConversationStore

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

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


class SqliteConversationStore(SqlConversationStore):
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
        super().__init__(max_history=max_history, idle_timeout_s=idle_timeout_s, max_age_s=max_age_s,
                         max_conversations=max_conversations, max_revisions=max_revisions,
                         tombstone_ttl_s=tombstone_ttl_s, clock=clock)
        self.path = Path(path)
        self._lock = threading.RLock()
        self.recovered_from: Path | None = None  # where a corrupt file was moved, if that happened
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

    def _where(self) -> dict[str, Any]:
        return {"backend": "sqlite", "path": str(self.path)}

    def _more_stats(self) -> dict[str, Any]:
        return {"recovered_from_corrupt_file": str(self.recovered_from) if self.recovered_from else None}

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _looks_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Corruption or a foreign file, as opposed to permissions or locking."""
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "malformed" in text or "no such column" in text
    return True
