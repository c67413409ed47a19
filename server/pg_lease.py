"""The sync leader of a shared index: a PostgreSQL session advisory lock.

Only the replica holding the lock scans the template sources and writes the LanceDB table; the others read
the latest table version. The lock lives exactly as long as the leader's database session, so a leader that
crashes or is killed (SIGKILL included: the kernel closes its socket) frees it at once, and the next replica
to try takes over. Every attempt first checks that the session holding the lock is still alive, so a leader
whose connection broke stops writing before anyone else can start.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

LOCK_NAME = "mcp-server-image-composer:index-writer"


class PgLease:
    def __init__(self, url: str, name: str = LOCK_NAME, connect_timeout: float = 5.0):
        self._url = url
        self._name = name
        self._timeout = connect_timeout
        self._conn: Any = None
        self._lock = threading.Lock()
        self.held = False

    def try_acquire(self) -> bool:
        """True when this process holds (or has just taken) the lease; never blocks on another holder."""
        import psycopg

        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("SELECT 1")
                    return True
                except psycopg.Error as exc:
                    log.warning("lost the index writer lease (%s); following the index until re-elected", exc)
                    self._drop()
            try:
                conn = psycopg.connect(self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)),
                                       application_name="oic-index-lease")
                got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self._name,)).fetchone()
            except psycopg.Error as exc:
                log.warning("index writer lease: PostgreSQL unreachable (%s); not writing the index", exc)
                return False
            if got and got[0]:
                self._conn = conn
                self.held = True
                log.info("this replica is now the index writer (sync leader)")
                return True
            conn.close()
            return False

    def _drop(self) -> None:
        conn, self._conn, self.held = self._conn, None, False
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken connection may fail to close; it is gone either way
                conn.close()

    def release(self) -> None:
        with self._lock:
            self._drop()
