"""The sync leader of a shared index: a PostgreSQL session advisory lock.

Only the replica holding the lock scans the template sources and writes the LanceDB table; the others read
the latest table version. The lock lives exactly as long as the leader's database session, so a leader that
crashes or is killed (SIGKILL included: the kernel closes its socket) frees it at once, and the next replica
to try takes over. Every attempt first checks that the session holding the lock is still alive, so a leader
whose connection broke stops writing before anyone else can start.

After each commit the leader sends a NOTIFY; followers LISTEN, so they load a new index version at once
instead of at their next ``ai.index_refresh`` poll (which stays as the fallback).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

LOCK_NAME = "mcp-server-image-composer:index-writer"
CHANNEL = "oic_index_changed"  # the leader NOTIFYs after each commit; followers LISTEN and load it at once


class PgLease:
    def __init__(self, url: str, name: str = LOCK_NAME, connect_timeout: float = 5.0):
        self._url = url
        self._name = name
        self._timeout = connect_timeout
        self._conn: Any = None
        self._lock = threading.Lock()
        self._listener: Any = None
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

    def notify(self) -> None:
        """Tell the followers that the index changed (they also poll, so a lost notification only delays)."""
        import psycopg

        with self._lock:
            if self._conn is None:
                return
            try:
                self._conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
            except psycopg.Error as exc:
                log.info("index change notification not sent: %s", exc)

    def wait_for_change(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for the leader's notification; True when one came."""
        import psycopg

        try:
            if self._listener is None:
                self._listener = psycopg.connect(self._url, autocommit=True,
                                                 connect_timeout=max(1, int(self._timeout)),
                                                 application_name="oic-index-follower")
                self._listener.execute(f"LISTEN {CHANNEL}")
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                return True
            return False
        except psycopg.Error as exc:
            log.info("index change notifications unavailable (%s); polling", exc)
            listener, self._listener = self._listener, None
            if listener is not None:
                with contextlib.suppress(Exception):
                    listener.close()
            time.sleep(timeout)
            return False

    def release(self) -> None:
        with self._lock:
            self._drop()
            listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(Exception):
                listener.close()
