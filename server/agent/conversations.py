"""Conversations: templates under refinement, their revisions and message history (the model and the contract).

Two stores implement :class:`ConversationStore` on one shared body of SQL (conversations_sql.py): SQLite for
one machine (conversations_sqlite.py) and PostgreSQL for several replicas (conversations_pg.py).

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
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
ROLES = frozenset({"system", "user", "assistant", "tool"})
_START_HINT = "call generate_template to start a new conversation"


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
    unknown_note: str  # added to "does not exist" (e.g. the store moved to a fallback cache dir, and why)

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


ENDED_DETAIL = {
    "expired": "expired",
    "evicted": "was evicted because the server holds too many conversations (least recently active first)",
    "deleted": "was deleted",
}


def duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def dump_meta(metadata: dict[str, Any]) -> str:
    try:
        return json.dumps(metadata, sort_keys=True, default=str)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"conversation metadata must be JSON-serialisable: {exc}") from None


def dead_reason(row: tuple[Any, ...], now: float, max_age_s: float, idle_timeout_s: float) -> tuple[str, str] | None:
    """(reason, human detail) when the conversation of this (created_at, last_active, ended_at, ended_reason)
    row is not live, else None: one expiry rule for every store."""
    created_at, last_active, ended_at, ended_reason = row
    if ended_at is not None:
        reason = ended_reason or "expired"
        return reason, ENDED_DETAIL.get(reason, reason)
    if now - created_at > max_age_s:
        return "expired", f"expired: it reached the maximum age of {duration(max_age_s)}"
    if now - last_active > idle_timeout_s:
        return "expired", f"expired after {duration(idle_timeout_s)} without activity"
    return None
