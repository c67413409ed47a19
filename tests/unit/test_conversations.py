"""SQLite conversation store: lifecycle, revisions, expiry, eviction, persistence, concurrency, recovery."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from image_composer_mcp.server.agent.conversations import (
    ConcurrentModification,
    ConversationError,
    ConversationNotFound,
    ConversationStore,
    InvalidConversationId,
)
from image_composer_mcp.server.agent.conversations_sqlite import SqliteConversationStore

T1 = "image:\n  name: one\n"
T2 = "image:\n  name: two\n"
T3 = "image:\n  name: three\n"


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[SqliteConversationStore]:
    s = SqliteConversationStore(tmp_path / "conv.db", clock=clock)
    yield s
    s.close()


def test_satisfies_the_protocol(store: SqliteConversationStore) -> None:
    def use(s: ConversationStore) -> ConversationStore:
        return s

    assert use(store) is store


def test_lifecycle(store: SqliteConversationStore, clock: Clock) -> None:
    conv = store.create(metadata={"provider": "offline", "grounded_on": ["a.yml"]})
    assert len(conv.id) == 32 and conv.current_revision == 0 and conv.current_yaml is None
    assert conv.metadata == {"provider": "offline", "grounded_on": ["a.yml"]}

    clock.advance(5)
    assert store.add_revision(conv.id, T1, note="generated", valid=True) == 1
    store.add_message(conv.id, "user", "minimal edge image")
    store.add_message(conv.id, "assistant", "here it is")
    assert store.add_revision(conv.id, T2, note="add docker", valid=False) == 2

    got = store.get(conv.id)
    assert got.current_revision == 2 and got.current_yaml == T2
    assert [(r.revision, r.note, r.valid) for r in got.revisions] == [
        (1, "generated", True),
        (2, "add docker", False),
    ]
    assert [(m.role, m.content) for m in got.messages] == [
        ("user", "minimal edge image"),
        ("assistant", "here it is"),
    ]
    assert got.last_active == clock.now and got.created_at == clock.now - 5
    assert got.revision(1).yaml == T1

    assert store.update_metadata(conv.id, {"provider": "ollama", "grounded_on": None}) == {
        "provider": "ollama"
    }
    summaries = store.list()
    assert [(s.id, s.revisions, s.messages, s.current_revision) for s in summaries] == [(conv.id, 2, 2, 2)]

    assert store.delete(conv.id) is True
    assert store.delete(conv.id) is False
    with pytest.raises(ConversationNotFound) as info:
        store.get(conv.id)
    assert info.value.reason == "deleted" and "generate_template" in str(info.value)
    assert store.list() == []


def test_unknown_id_message(store: SqliteConversationStore) -> None:
    with pytest.raises(ConversationNotFound) as info:
        store.get("never-seen")
    assert info.value.reason == "unknown"
    assert (
        str(info.value)
        == "conversation 'never-seen' does not exist; call generate_template to start a new conversation"
    )
    with pytest.raises(KeyError):  # callers that only know KeyError still catch it
        store.add_revision("never-seen", T1, note="x", valid=True)


def test_client_supplied_id_is_reused_while_live(store: SqliteConversationStore) -> None:
    first = store.create("chat-42:tab.1", metadata={"provider": "openai"})
    store.add_revision(first.id, T1, note="generated", valid=True)
    again = store.create("chat-42:tab.1", metadata={"grounded_on": ["x.yml"]})
    assert again.id == "chat-42:tab.1" and again.current_yaml == T1
    assert again.metadata == {"provider": "openai", "grounded_on": ["x.yml"]}
    assert store.stats()["live_conversations"] == 1


def test_deleted_id_can_start_afresh(store: SqliteConversationStore) -> None:
    store.create("abc")
    store.add_revision("abc", T1, note="generated", valid=True)
    store.delete("abc")
    fresh = store.create("abc")
    assert fresh.revisions == [] and fresh.current_revision == 0


@pytest.mark.parametrize(
    "bad", ["", "a" * 129, "has space", "slash/no", "semi;colon", "ünicode", "new\nline"]
)
def test_invalid_ids(store: SqliteConversationStore, bad: str) -> None:
    with pytest.raises(InvalidConversationId, match="1-128 characters"):
        store.create(bad)
    with pytest.raises(ValueError):
        store.get(bad)


def test_valid_id_edges(store: SqliteConversationStore) -> None:
    assert store.create("a" * 128).id == "a" * 128
    assert store.create("A.b_c:d-9").id == "A.b_c:d-9"


def test_history_cap_keeps_newest(tmp_path: Path, clock: Clock) -> None:
    store = SqliteConversationStore(tmp_path / "c.db", max_history=5, clock=clock)
    try:
        cid = store.create().id
        for i in range(12):
            clock.advance(1)
            store.add_message(cid, "user" if i % 2 == 0 else "assistant", f"m{i}")
        messages = store.get(cid).messages
        assert [m.content for m in messages] == ["m7", "m8", "m9", "m10", "m11"]
        assert messages[-1].at == clock.now
        with pytest.raises(ValueError, match="role"):
            store.add_message(cid, "robot", "x")
    finally:
        store.close()


def test_revert_creates_a_new_revision(store: SqliteConversationStore) -> None:
    cid = store.create().id
    with pytest.raises(ValueError, match="no revisions yet"):
        store.revert(cid, 1)
    store.add_revision(cid, T1, note="generated", valid=True)
    store.add_revision(cid, T2, note="add docker", valid=False)
    store.add_revision(cid, T3, note="bigger disk", valid=True)
    assert store.revert(cid, 1) == 4
    conv = store.get(cid)
    assert conv.current_revision == 4 and conv.current_yaml == T1
    assert [r.yaml for r in conv.revisions] == [T1, T2, T3, T1]  # history never lost
    assert conv.revisions[-1].note == "revert to revision 1" and conv.revisions[-1].valid is True
    assert store.revert(cid, 2) == 5 and store.get(cid).current_revision == 5
    with pytest.raises(ValueError, match="available revisions: 1-5"):
        store.revert(cid, 9)


def test_revision_cap_drops_oldest(tmp_path: Path, clock: Clock) -> None:
    store = SqliteConversationStore(tmp_path / "c.db", max_revisions=3, clock=clock)
    try:
        cid = store.create().id
        for i in range(6):
            store.add_revision(cid, f"image:\n  name: r{i}\n", note=str(i), valid=True)
        assert [r.revision for r in store.get(cid).revisions] == [4, 5, 6]
        with pytest.raises(ValueError, match="available revisions: 4-6"):
            store.revert(cid, 1)
    finally:
        store.close()


def test_optimistic_concurrency(store: SqliteConversationStore) -> None:
    cid = store.create().id
    assert store.add_revision(cid, T1, note="generated", valid=True, expected_revision=0) == 1
    assert store.add_revision(cid, T2, note="r2", valid=True, expected_revision=1) == 2
    with pytest.raises(ConcurrentModification) as info:
        store.add_revision(cid, T3, note="stale", valid=True, expected_revision=1)
    assert (info.value.expected, info.value.current) == (1, 2)
    assert store.get(cid).current_yaml == T2


def test_idle_expiry(store: SqliteConversationStore, clock: Clock) -> None:
    a = store.create().id
    b = store.create().id
    clock.advance(1700)
    store.get(b)  # touching keeps b alive
    clock.advance(200)  # a idle 1900 s > 1800 s, b idle 200 s
    with pytest.raises(ConversationNotFound) as info:
        store.get(a)
    assert info.value.reason == "expired" and "30 min without activity" in str(info.value)
    assert [s.id for s in store.list()] == [b]
    assert store.expire() == 1
    assert store.expire() == 0
    with pytest.raises(ConversationNotFound, match="expired"):
        store.add_message(a, "user", "hi")
    assert store.get(b).id == b


def test_max_age_expiry_despite_activity(tmp_path: Path, clock: Clock) -> None:
    store = SqliteConversationStore(tmp_path / "c.db", idle_timeout_s=100, max_age_s=1000, clock=clock)
    try:
        cid = store.create().id
        for _ in range(9):
            clock.advance(99)
            store.add_message(cid, "user", "still here")
        clock.advance(120)  # age 1011 s, last activity 120 s ago... but age alone is enough
        with pytest.raises(ConversationNotFound) as info:
            store.get(cid)
        assert "maximum age" in str(info.value)
        assert store.expire() == 1
        with pytest.raises(ConversationNotFound) as info:
            store.get(cid)
        assert info.value.reason == "expired"
    finally:
        store.close()


def test_tombstones_are_purged_later(tmp_path: Path, clock: Clock) -> None:
    store = SqliteConversationStore(tmp_path / "c.db", idle_timeout_s=10, tombstone_ttl_s=100, clock=clock)
    try:
        cid = store.create().id
        clock.advance(11)
        assert store.expire() == 1
        clock.advance(101)
        store.expire()
        with pytest.raises(ConversationNotFound) as info:
            store.get(cid)
        assert info.value.reason == "unknown"
    finally:
        store.close()


def test_cap_evicts_least_recently_active(tmp_path: Path, clock: Clock) -> None:
    store = SqliteConversationStore(tmp_path / "c.db", max_conversations=3, clock=clock)
    try:
        ids = []
        for _ in range(3):
            clock.advance(1)
            ids.append(store.create().id)
        clock.advance(1)
        store.get(ids[0])  # ids[1] is now the least recently active
        clock.advance(1)
        newest = store.create().id
        assert {s.id for s in store.list()} == {ids[0], ids[2], newest}
        with pytest.raises(ConversationNotFound) as info:
            store.get(ids[1])
        assert info.value.reason == "evicted" and "too many conversations" in str(info.value)
        assert store.stats()["live_conversations"] == 3
    finally:
        store.close()


def test_persistence_across_reopen(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "sub" / "conv.db"
    first = SqliteConversationStore(path, clock=clock)
    cid = first.create("persist-me", metadata={"provider": "ollama"}).id
    first.add_revision(cid, T1, note="generated", valid=True)
    first.add_message(cid, "user", "hello")
    before = first.get(cid)
    first.close()

    second = SqliteConversationStore(path, clock=clock)
    try:
        after = second.get(cid)
        assert after == before
        assert second.add_revision(cid, T2, note="after restart", valid=True) == 2
        assert second.stats()["live_conversations"] == 1
        mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        second.close()


def test_concurrent_add_revision_has_no_lost_updates(tmp_path: Path) -> None:
    store = SqliteConversationStore(tmp_path / "c.db")
    try:
        cid = store.create().id
        store.add_revision(cid, T1, note="generated", valid=True)
        successes: list[int] = []
        conflicts: list[int] = []
        lock = threading.Lock()
        barrier = threading.Barrier(20)

        def worker(n: int) -> None:
            seen = store.get(cid).current_revision
            barrier.wait()
            try:
                rev = store.add_revision(
                    cid, f"image:\n  name: w{n}\n", note=f"w{n}", valid=True, expected_revision=seen
                )
            except ConcurrentModification:
                with lock:
                    conflicts.append(n)
            else:
                with lock:
                    successes.append(rev)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        conv = store.get(cid)
        assert len(successes) + len(conflicts) == 20
        assert len(conv.revisions) == 1 + len(successes)
        assert sorted(successes) == list(range(2, 2 + len(successes)))
        # All 20 read revision 1 before anyone wrote, so exactly one write may win.
        assert len(successes) == 1

        # Workers that retry on conflict all get their write in, each exactly once.
        def retrying(n: int) -> None:
            while True:
                current = store.get(cid).current_revision
                try:
                    store.add_revision(
                        cid, f"image:\n  name: r{n}\n", note=f"r{n}", valid=True, expected_revision=current
                    )
                    return
                except ConcurrentModification:
                    continue

        threads = [threading.Thread(target=retrying, args=(n,)) for n in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        notes = [r.note for r in store.get(cid).revisions]
        assert sorted(n for n in notes if n.startswith("r")) == sorted(f"r{n}" for n in range(20))
        assert len(notes) == 2 + 20
    finally:
        store.close()


def test_two_store_objects_on_one_file(tmp_path: Path) -> None:
    # Two server processes sharing a file: the compare-and-set still holds across connections.
    a = SqliteConversationStore(tmp_path / "c.db")
    b = SqliteConversationStore(tmp_path / "c.db")
    try:
        cid = a.create().id
        a.add_revision(cid, T1, note="a", valid=True, expected_revision=0)
        with pytest.raises(ConcurrentModification):
            b.add_revision(cid, T2, note="b", valid=True, expected_revision=0)
        assert b.get(cid).current_yaml == T1
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    "content",
    [b"this is not a sqlite database at all\n" * 200, b"SQLite format 3\x00" + b"\xff" * 4096],
    ids=["garbage", "broken-header"],
)
def test_corrupt_file_is_moved_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    path = tmp_path / "conv.db"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="image_composer_mcp.server.agent.conversations"):
        store = SqliteConversationStore(path)
    try:
        assert store.recovered_from is not None and store.recovered_from.read_bytes() == content
        assert store.recovered_from.name.startswith("conv.db.corrupt-")
        assert any("moved it to" in r.getMessage() for r in caplog.records)
        cid = store.create().id
        assert store.add_revision(cid, T1, note="works", valid=True) == 1
        assert store.stats()["recovered_from_corrupt_file"] == str(store.recovered_from)
    finally:
        store.close()


def test_foreign_database_with_other_schema_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "conv.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE conversations (name TEXT)")
    conn.commit()
    conn.close()
    store = SqliteConversationStore(path)
    try:
        assert store.recovered_from is not None
        assert store.create("x").id == "x"
    finally:
        store.close()


def test_unwritable_location_gives_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    with pytest.raises(ConversationError, match="cannot open the conversation store.*writable"):
        SqliteConversationStore(blocker / "conv.db")


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores directory permissions"
)
def test_read_only_directory_gives_a_clear_error(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(ConversationError, match="writable"):
            SqliteConversationStore(ro / "conv.db")
    finally:
        ro.chmod(0o755)


def test_stats(store: SqliteConversationStore) -> None:
    assert store.stats()["live_conversations"] == 0
    assert store.stats()["avg_revisions_per_conversation"] == 0.0
    a = store.create().id
    b = store.create().id
    store.add_revision(a, T1, note="g", valid=True)
    store.add_revision(a, T2, note="r", valid=False)
    store.add_revision(a, T3, note="r", valid=True)
    store.add_revision(b, T1, note="g", valid=True)
    stats = store.stats()
    assert stats["live_conversations"] == 2
    assert stats["revisions"] == 4 and stats["valid_revisions"] == 3
    assert stats["avg_revisions_per_conversation"] == 2.0


def test_in_memory_store() -> None:
    store = SqliteConversationStore(":memory:")
    try:
        cid = store.create().id
        assert store.add_revision(cid, T1, note="g", valid=True) == 1
    finally:
        store.close()
