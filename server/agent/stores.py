"""Which conversation store a server uses: PostgreSQL when ``ai.conversations_url`` is set (team
deployments, several replicas), otherwise SQLite in the cache dir (one machine), or in memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ..core.config import AISettings
from .conversations import ConversationStore


def open_conversation_store(settings: AISettings, cache_dir: Path | None,
                            clock: Callable[[], float] = time.time) -> ConversationStore:
    c = settings.conversation
    if settings.conversations_url is not None:
        from .conversations_pg import PostgresConversationStore

        return PostgresConversationStore(settings.conversations_url.get_secret_value(), max_history=c.max_history,
                                         idle_timeout_s=c.session_timeout, max_age_s=c.max_age,
                                         max_conversations=c.max_conversations, clock=clock)
    from .conversations_sqlite import SqliteConversationStore

    return SqliteConversationStore((cache_dir / "conversations.sqlite3") if cache_dir else ":memory:",
                                   max_history=c.max_history, idle_timeout_s=c.session_timeout, max_age_s=c.max_age,
                                   max_conversations=c.max_conversations, clock=clock)
